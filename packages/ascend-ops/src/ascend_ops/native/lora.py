# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""CPU implementation of the LoRA ops: vectorised torch, no C++ kernel.

LoRA matmuls are thin (rank 8-128) and the adapters in one batch are few, so each op is a single
dense GEMM over every adapter slot followed by a per-token selection, which torch's BLAS already
runs at full speed; a C++ kernel would gain nothing here. No host synchronisation and no
data-dependent shapes, so the same code is valid inside a captured region:

* shrink: ``x @ A_all^T`` with ``A_all`` the slots stacked to [slots * rank, in], then the
  token's own slot is gathered from the [T, slots, rank] result;
* expand: the token's input is scattered into its slot's block of a [T, slots * rank] matrix
  (one-hot over slots, zero for index -1) and multiplied by ``B_all`` [slots * rank, out].

Math in float32 (vLLM's LoRA buffers are float32 too); results are cast to the output dtype.
Dtype casts are written as ``empty`` + ``copy_`` (``cast``), never ``Tensor.to``: a graph capture
records ``copy_`` as a device op, while ``to`` may alias its input and is not re-run on replay.
Semantics are those of ``ascend_ops.reference.lora``.
"""

from __future__ import annotations

import torch


def _as3d(w: torch.Tensor) -> torch.Tensor:
    return w[:, 0] if w.dim() == 4 else w


def cast(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``t`` in ``dtype``: ``t`` itself when it already is, else a new tensor filled by copy_."""
    if t.dtype == dtype:
        return t
    return torch.empty(t.shape, dtype=dtype, device=t.device).copy_(t)


def _onehot(indices: torch.Tensor, slots: int) -> torch.Tensor:
    """[T, slots] float32: 1 at the token's slot, a zero row for a negative index."""
    ar = torch.arange(slots, device=indices.device)
    return cast(cast(indices, torch.long).unsqueeze(1) == ar, torch.float32)


def _shrink_f32(x, lora_a, indices, scale):
    a = _as3d(lora_a)
    slots, rank, hidden = a.shape
    xa = cast(x, torch.float32) @ cast(a.reshape(slots * rank, hidden), torch.float32).t()  # [T, slots * rank]
    xa = xa.view(-1, slots, rank)
    return torch.einsum("tsr,ts->tr", xa, _onehot(indices, slots)) * scale


def _expand_f32(x, lora_b, indices, y_slice_size):
    b = _as3d(lora_b)[:, :y_slice_size]
    slots = b.shape[0]
    scattered = cast(x, torch.float32).unsqueeze(1) * _onehot(indices, slots).unsqueeze(2)  # [T, slots, rank]
    return torch.einsum("tsr,sor->to", scattered, cast(b, torch.float32))


def lora_shrink(x, lora_a, indices, scale, out):
    val = _shrink_f32(x, lora_a, indices, scale)
    out[:, : val.shape[1]].copy_(val)
    return out


def lora_expand(x, lora_b, indices, y, y_offset, y_slice_size, add_inputs):
    val = _expand_f32(x, lora_b, indices, y_slice_size)
    view = y[:, y_offset:y_offset + y_slice_size]
    if add_inputs:
        view.copy_(cast(view, torch.float32) + val)
    else:
        keep = (indices < 0).unsqueeze(1)  # rows without an adapter stay as they are
        view.copy_(torch.where(keep, cast(view, torch.float32), val))
    return y


def lora_linear(y, x, lora_a, lora_b, indices, scale, y_offset, y_slice_size):
    mid = _shrink_f32(x, lora_a, indices, scale)
    val = _expand_f32(mid, lora_b, indices, y_slice_size)
    view = y[:, y_offset:y_offset + y_slice_size]
    view.copy_(cast(view, torch.float32) + val)
    return y


def segments_to_tokens(seg_lens, seg_lora, num_tokens, rows):
    """Per-token adapter indices [rows] from (segment lengths, segment adapters): ``num_tokens``
    (host int, the segments' total) keeps the expansion's size static; rows past it (padding)
    get -1."""
    idx = torch.repeat_interleave(cast(seg_lora, torch.long), cast(seg_lens, torch.long),
                                  output_size=num_tokens)
    if rows > num_tokens:
        idx = torch.cat([idx, idx.new_full((rows - num_tokens,), -1)])
    return idx


def sgmv_shrink(x, lora_a, seg_lens, seg_lora, num_tokens, scale, out):
    idx = segments_to_tokens(seg_lens, seg_lora, num_tokens, x.shape[0])
    return lora_shrink(x, lora_a, idx, scale, out)


def sgmv_expand(x, lora_b, seg_lens, seg_lora, num_tokens, y, y_offset, y_slice_size, add_inputs):
    idx = segments_to_tokens(seg_lens, seg_lora, num_tokens, x.shape[0])
    return lora_expand(x, lora_b, idx, y, y_offset, y_slice_size, add_inputs)
