# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""LoRA (Punica) ops: ``torch.ops.ascend.lora_{shrink,expand,linear}`` (per token, BGMV) and
``torch.ops.ascend.sgmv_{shrink,expand}`` (per segment, SGMV).

Semantics: vLLM 0.32's punica interface (``vllm/lora/punica_wrapper/punica_base.py``) and the
Punica paper (arXiv:2310.18547). Weights are vLLM's stacked LoRA tensors: ``lora_a``
[slots, 1, rank, in] (or [slots, rank, in]), ``lora_b`` [slots, 1, out, rank] (or
[slots, out, rank]); a token's adapter index selects the slot, and a negative index (-1) means
"no adapter": shrink writes zeros for it, expand and linear leave its row unchanged.
Indices are int32/int64 device tensors, read only on the device (no host sync), so a captured
graph stays valid when the adapters of the batch change. The segment forms take a host
``num_tokens`` (the segments' total) so their shapes are static.
NPU: ``torch_npu.npu_batch_gather_matmul_`` on Atlas A2 (the products it is documented for), an
aten composition on A3/310P and outside its limits (see ``ascend_ops.npu.lora``).
"""

from __future__ import annotations

import torch

from ascend_ops._dispatch import eager_direct
from ascend_ops.checks import lora as chk
from ascend_ops.families import FAMILIES

_LORA = FAMILIES["lora"]


def _lora_shrink_impl(x: torch.Tensor, lora_a: torch.Tensor, indices: torch.Tensor,
                      scale: float, out: torch.Tensor) -> None:
    chk.shrink(x, lora_a, indices, out)
    indices = indices[: x.shape[0]]
    _LORA.pick("lora_shrink", x).lora_shrink(x, lora_a, indices, scale, out)


def _lora_expand_impl(x: torch.Tensor, lora_b: torch.Tensor, indices: torch.Tensor,
                      y: torch.Tensor, y_offset: int, y_slice_size: int,
                      add_inputs: bool) -> None:
    chk.expand(x, lora_b, indices, y, y_offset, y_slice_size)
    indices = indices[: x.shape[0]]
    _LORA.pick("lora_expand", x).lora_expand(x, lora_b, indices, y, y_offset, y_slice_size, add_inputs)


def _lora_linear_impl(y: torch.Tensor, x: torch.Tensor, lora_a: torch.Tensor,
                      lora_b: torch.Tensor, indices: torch.Tensor, scale: float,
                      y_offset: int, y_slice_size: int) -> None:
    chk.linear(y, x, lora_a, lora_b, indices, y_offset, y_slice_size)
    indices = indices[: x.shape[0]]
    _LORA.pick("lora_linear", x).lora_linear(y, x, lora_a, lora_b, indices, scale, y_offset, y_slice_size)


def _sgmv_shrink_impl(x: torch.Tensor, lora_a: torch.Tensor, seg_lens: torch.Tensor,
                      seg_lora: torch.Tensor, num_tokens: int, scale: float,
                      out: torch.Tensor) -> None:
    chk.segments(x, seg_lens, seg_lora, num_tokens)
    chk.shrink(x, lora_a, None, out)
    _LORA.pick("sgmv_shrink", x).sgmv_shrink(x, lora_a, seg_lens, seg_lora, num_tokens, scale, out)


def _sgmv_expand_impl(x: torch.Tensor, lora_b: torch.Tensor, seg_lens: torch.Tensor,
                      seg_lora: torch.Tensor, num_tokens: int, y: torch.Tensor, y_offset: int,
                      y_slice_size: int, add_inputs: bool) -> None:
    chk.segments(x, seg_lens, seg_lora, num_tokens)
    chk.expand(x, lora_b, None, y, y_offset, y_slice_size)
    _LORA.pick("sgmv_expand", x).sgmv_expand(x, lora_b, seg_lens, seg_lora, num_tokens, y, y_offset,
                              y_slice_size, add_inputs)


_shrink_op = torch.library.custom_op("ascend::lora_shrink", mutates_args=("out",))(
    _lora_shrink_impl)
_expand_op = torch.library.custom_op("ascend::lora_expand", mutates_args=("y",))(
    _lora_expand_impl)
_linear_op = torch.library.custom_op("ascend::lora_linear", mutates_args=("y",))(
    _lora_linear_impl)
_sgmv_shrink_op = torch.library.custom_op("ascend::sgmv_shrink", mutates_args=("out",))(
    _sgmv_shrink_impl)
_sgmv_expand_op = torch.library.custom_op("ascend::sgmv_expand", mutates_args=("y",))(
    _sgmv_expand_impl)


@_shrink_op.register_fake
def _(x, lora_a, indices, scale, out):
    chk.shrink(x, lora_a, indices, out)


@_expand_op.register_fake
def _(x, lora_b, indices, y, y_offset, y_slice_size, add_inputs):
    chk.expand(x, lora_b, indices, y, y_offset, y_slice_size)


@_linear_op.register_fake
def _(y, x, lora_a, lora_b, indices, scale, y_offset, y_slice_size):
    chk.linear(y, x, lora_a, lora_b, indices, y_offset, y_slice_size)


@_sgmv_shrink_op.register_fake
def _(x, lora_a, seg_lens, seg_lora, num_tokens, scale, out):
    chk.shrink(x, lora_a, None, out)


@_sgmv_expand_op.register_fake
def _(x, lora_b, seg_lens, seg_lora, num_tokens, y, y_offset, y_slice_size, add_inputs):
    chk.expand(x, lora_b, None, y, y_offset, y_slice_size)


def lora_shrink(x: torch.Tensor, lora_a: torch.Tensor, indices: torch.Tensor, scale: float,
                out: torch.Tensor) -> None:
    """BGMV shrink, in place: ``out[t, :rank] = scale * x[t] @ lora_a[indices[t]]^T``.

    Shapes: ``x`` [T, in] float32/bfloat16/float16; ``lora_a`` [slots, 1, rank, in] or
    [slots, rank, in]; ``indices`` [>= T] int32/int64 (first T used; -1 = no adapter, zeros);
    ``out`` [T, >= rank] float32/bfloat16/float16 (vLLM's LoRA buffer, float32). float32 math.
    Raises ValueError naming the argument for mismatched shapes, TypeError for dtypes.
    """
    if eager_direct(x, lora_a, indices, out):
        return _lora_shrink_impl(x, lora_a, indices, scale, out)
    torch.ops.ascend.lora_shrink(x, lora_a, indices, scale, out)


def lora_expand(x: torch.Tensor, lora_b: torch.Tensor, indices: torch.Tensor, y: torch.Tensor,
                y_offset: int = 0, y_slice_size: int | None = None,
                add_inputs: bool = True) -> None:
    """BGMV expand, in place: ``y[t, off:off+size] (+)= x[t] @ lora_b[indices[t], :size]^T``.

    Shapes: ``x`` [T, rank]; ``lora_b`` [slots, 1, out, rank] or [slots, out, rank] with
    out >= size; ``y`` [T, N] with ``y_offset + y_slice_size <= N`` (a packed qkv / gate_up
    output: one call per slice). ``y_slice_size`` defaults to min(out, N - y_offset). Rows with
    index -1 are unchanged. ``add_inputs=False`` overwrites the slice instead of adding.
    Raises ValueError naming the argument for a slice outside ``y`` or mismatched shapes.
    """
    if y_slice_size is None:
        b_out = lora_b.shape[-2]
        y_slice_size = min(b_out, y.shape[-1] - y_offset)
    if eager_direct(x, lora_b, indices, y):
        return _lora_expand_impl(x, lora_b, indices, y, y_offset, y_slice_size, add_inputs)
    torch.ops.ascend.lora_expand(x, lora_b, indices, y, y_offset, y_slice_size, add_inputs)


def lora_linear(y: torch.Tensor, x: torch.Tensor, lora_a: torch.Tensor, lora_b: torch.Tensor,
                indices: torch.Tensor, scale: float, y_offset: int = 0,
                y_slice_size: int | None = None) -> None:
    """Fused shrink + expand (one LoRA slice of a linear layer), in place:
    ``y[t, off:off+size] += scale * (x[t] @ A[i]^T) @ B[i]^T`` with ``i = indices[t]``.

    Shapes as :func:`lora_shrink` / :func:`lora_expand`; ``y`` in x's dtype. This is the call
    ``torch_npu.npu_batch_gather_matmul_`` serves in one kernel (float16, rank 16..128).
    """
    if y_slice_size is None:
        y_slice_size = lora_b.shape[-2]
    if eager_direct(y, x, lora_a, lora_b, indices):
        return _lora_linear_impl(y, x, lora_a, lora_b, indices, scale, y_offset, y_slice_size)
    torch.ops.ascend.lora_linear(y, x, lora_a, lora_b, indices, scale, y_offset, y_slice_size)


def sgmv_shrink(x: torch.Tensor, lora_a: torch.Tensor, seg_lens: torch.Tensor,
                seg_lora: torch.Tensor, num_tokens: int, scale: float, out: torch.Tensor) -> None:
    """SGMV shrink: :func:`lora_shrink` with tokens grouped in segments (prefill layout).

    ``seg_lens`` [S] and ``seg_lora`` [S] int32/int64 (segment s: ``seg_lens[s]`` consecutive
    tokens using adapter ``seg_lora[s]``, -1 = none); ``num_tokens`` (host int) = sum of
    ``seg_lens`` <= T; rows past it are treated as index -1.
    """
    if eager_direct(x, lora_a, seg_lens, seg_lora, out):
        return _sgmv_shrink_impl(x, lora_a, seg_lens, seg_lora, num_tokens, scale, out)
    torch.ops.ascend.sgmv_shrink(x, lora_a, seg_lens, seg_lora, num_tokens, scale, out)


def sgmv_expand(x: torch.Tensor, lora_b: torch.Tensor, seg_lens: torch.Tensor,
                seg_lora: torch.Tensor, num_tokens: int, y: torch.Tensor, y_offset: int = 0,
                y_slice_size: int | None = None, add_inputs: bool = True) -> None:
    """SGMV expand: :func:`lora_expand` with tokens grouped in segments (see :func:`sgmv_shrink`)."""
    if y_slice_size is None:
        y_slice_size = min(lora_b.shape[-2], y.shape[-1] - y_offset)
    if eager_direct(x, lora_b, seg_lens, seg_lora, y):
        return _sgmv_expand_impl(x, lora_b, seg_lens, seg_lora, num_tokens, y, y_offset,
                                 y_slice_size, add_inputs)
    torch.ops.ascend.sgmv_expand(x, lora_b, seg_lens, seg_lora, num_tokens, y, y_offset,
                                 y_slice_size, add_inputs)
