# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Dense linear op with CPU weight prepacking: ``torch.ops.ascend.linear``.

``pack_linear_weight(weight)`` returns an integer handle; ``linear(x, weight, bias, handle)``
computes ``x @ weight^T + bias``. Only the native CPU backend uses the handle (a packed copy
of the weight kept inside ``ascend_ops.native.linear``: the grouped-matmul column blocks for
decode rows, and on AVX-512 builds oneDNN's layout for wider bfloat16 / float16 inputs); the NPU
branch and the reference ignore it and read ``weight``, which stays the plain ``[N, K]`` tensor on every backend.
"""

from __future__ import annotations

import torch

from ascend_ops._dispatch import eager_direct
from ascend_ops.checks.tensors import float_tensor
from ascend_ops.families import FAMILIES
from ascend_ops.native import linear as _native_linear

_LINEAR = FAMILIES["linear"]


def _check(x, weight, bias) -> None:
    float_tensor("x", x)
    float_tensor("weight", weight)
    if weight.dim() != 2:
        raise ValueError(f"weight must be 2-D [N, K], got shape {tuple(weight.shape)}")
    if x.dim() < 1 or x.shape[-1] != weight.shape[1]:
        raise ValueError(f"x last dim must equal weight's K={weight.shape[1]}, got shape "
                         f"{tuple(x.shape)}")
    if x.dtype != weight.dtype:
        raise TypeError(f"x dtype {x.dtype} must equal weight dtype {weight.dtype}")
    if bias is not None and (bias.shape != (weight.shape[0],) or bias.dtype != weight.dtype):
        raise ValueError(f"bias must be [{weight.shape[0]}] in {weight.dtype}, got "
                         f"{tuple(bias.shape)} {bias.dtype}")


def _linear_impl(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                 handle: int) -> torch.Tensor:
    _check(x, weight, bias)
    return _LINEAR.pick("linear", x).linear(x, weight, bias, handle)


_linear_op = torch.library.custom_op("ascend::linear", mutates_args=())(_linear_impl)


@_linear_op.register_fake
def _(x, weight, bias, handle):
    _check(x, weight, bias)
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


def pack_linear_weight(weight: torch.Tensor) -> int:
    """Prepack ``weight`` [N, K] for the native CPU backend; return its handle.

    Returns -1 (plain ``aten.linear``) unless the weight is a 2-D CPU tensor, the native backend
    is the one that would run and a packing applies (``native.linear.packable``: ``_C``'s column
    blocks for decode rows, every float dtype; PyTorch's oneDNN pack beside them for larger
    inputs: float32 wherever oneDNN runs float32, bfloat16 / float16 on AVX-512 builds where the
    CPU has those kernels). The pack is rebuilt
    on first use after ``weight`` is written in place or moved. Raises TypeError for a non-float
    ``weight``.
    """
    float_tensor("weight", weight)
    if weight.device.type != "cpu":
        return -1
    return _LINEAR.peek(weight).pack_linear_weight(weight)


def release_linear_weight(handle: int) -> None:
    """Free the packed copy behind ``handle`` (no-op for -1)."""
    _native_linear.release(int(handle))


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
           handle: int = -1) -> torch.Tensor:
    """y = x @ weight^T + bias (``torch.nn.functional.linear`` semantics).

    Shapes: ``x`` [..., K], ``weight`` [N, K], ``bias`` [N] or None, all one float dtype ->
    [..., N] in that dtype. ``handle`` from :func:`pack_linear_weight` selects the prepacked
    copy on the native CPU backend (-1: none). NPU: ``aten.linear`` on the NPU tensors.
    Raises TypeError / ValueError naming the argument on a dtype or shape mismatch.
    """
    if eager_direct(x, weight) and (bias is None or type(bias) is torch.Tensor):
        return _linear_impl(x, weight, bias, int(handle))
    return torch.ops.ascend.linear(x, weight, bias, int(handle))
