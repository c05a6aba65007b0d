# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Reference LoRA (Punica) kernels: per-token loops in float64, written for readability.

Semantics follow vLLM 0.32's punica interface (``vllm/lora/punica_wrapper/punica_base.py``,
``vllm/lora/ops/torch_ops/lora_ops.py``) and the Punica paper (Chen et al., 2023,
arXiv:2310.18547), with the Triton kernels' rule for the "no adapter" index: a token whose
adapter index is negative is left untouched by expand and gets zeros from shrink.

Weight layout (vLLM's stacked LoRA weights): ``lora_a`` [num_slots, 1, rank, in_features] and
``lora_b`` [num_slots, 1, out_features, rank]; the 3-D forms [num_slots, rank, in] /
[num_slots, out, rank] are accepted too.
"""

from __future__ import annotations

import torch


def _as3d(w: torch.Tensor) -> torch.Tensor:
    return w[:, 0] if w.dim() == 4 else w


def segments_to_tokens(seg_lens: torch.Tensor, seg_lora: torch.Tensor, rows: int) -> torch.Tensor:
    """Per-token adapter indices from segments (sgmv layout): segment s covers ``seg_lens[s]``
    consecutive tokens, all using adapter ``seg_lora[s]``; rows after the last segment get -1."""
    out: list[int] = []
    for n, idx in zip(seg_lens.tolist(), seg_lora.tolist(), strict=True):
        out.extend([int(idx)] * int(n))
    out.extend([-1] * (rows - len(out)))
    return torch.tensor(out, dtype=torch.long)


def lora_shrink(x, lora_a, indices, scale, out):
    """out[t, :rank] = scale * x[t] @ lora_a[indices[t]]^T (zeros where indices[t] < 0)."""
    a = _as3d(lora_a).double()
    rank = a.shape[1]
    for t in range(x.shape[0]):
        idx = int(indices[t])
        row = torch.zeros(rank, dtype=torch.float64)
        if idx >= 0:
            row = scale * (a[idx] @ x[t].double())
        out[t, :rank] = row.to(out.dtype)
    return out


def lora_expand(x, lora_b, indices, y, y_offset, y_slice_size, add_inputs):
    """y[t, off:off+size] (+)= x[t] @ lora_b[indices[t]]^T; rows with indices[t] < 0 untouched."""
    b = _as3d(lora_b).double()
    for t in range(x.shape[0]):
        idx = int(indices[t])
        if idx < 0:
            continue
        val = b[idx, :y_slice_size] @ x[t].double()
        cur = y[t, y_offset:y_offset + y_slice_size].double()
        y[t, y_offset:y_offset + y_slice_size] = (cur + val if add_inputs else val).to(y.dtype)
    return y


def lora_linear(y, x, lora_a, lora_b, indices, scale, y_offset, y_slice_size):
    """Fused shrink + expand: y[t, off:off+size] += scale * (x[t] @ A^T) @ B^T of adapter
    ``indices[t]`` (rows with a negative index untouched)."""
    a = _as3d(lora_a).double()
    b = _as3d(lora_b).double()
    for t in range(x.shape[0]):
        idx = int(indices[t])
        if idx < 0:
            continue
        val = b[idx, :y_slice_size] @ (scale * (a[idx] @ x[t].double()))
        cur = y[t, y_offset:y_offset + y_slice_size].double()
        y[t, y_offset:y_offset + y_slice_size] = (cur + val).to(y.dtype)
    return y


def sgmv_shrink(x, lora_a, seg_lens, seg_lora, num_tokens, scale, out):
    """Segment form of :func:`lora_shrink` (tokens grouped by consecutive adapter)."""
    return lora_shrink(x, lora_a, segments_to_tokens(seg_lens, seg_lora, x.shape[0]), scale, out)


def sgmv_expand(x, lora_b, seg_lens, seg_lora, num_tokens, y, y_offset, y_slice_size, add_inputs):
    """Segment form of :func:`lora_expand`."""
    idx = segments_to_tokens(seg_lens, seg_lora, x.shape[0])
    return lora_expand(x, lora_b, idx, y, y_offset, y_slice_size, add_inputs)
