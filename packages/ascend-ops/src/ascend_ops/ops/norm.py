# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""RMSNorm ops: ``torch.ops.ascend.rms_norm`` and ``torch.ops.ascend.add_rms_norm``."""

from __future__ import annotations

import torch

from ascend_ops._dispatch import eager_direct
from ascend_ops.checks import layers as _checks
from ascend_ops.families import FAMILIES

_NORM = FAMILIES["norm"]


def _rms_norm_impl(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    _checks.rms_norm(x, weight, eps)
    return _NORM.pick("rms_norm", x).rms_norm(x, weight, eps)


_rms_norm_op = torch.library.custom_op("ascend::rms_norm", mutates_args=())(_rms_norm_impl)


@_rms_norm_op.register_fake
def _(x, weight, eps):
    _checks.rms_norm(x, weight, eps)
    return torch.empty_like(x)


def _add_rms_norm_impl(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    _checks.add_rms_norm(x, residual, weight, eps)
    return _NORM.pick("add_rms_norm", x).add_rms_norm(x, residual, weight, eps)


_add_rms_norm_op = torch.library.custom_op("ascend::add_rms_norm", mutates_args=())(_add_rms_norm_impl)


@_add_rms_norm_op.register_fake
def _(x, residual, weight, eps):
    _checks.add_rms_norm(x, residual, weight, eps)
    return torch.empty_like(x), torch.empty_like(x)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Root-mean-square layer norm over the last dim.

    Shapes: ``x`` [..., H] (float32/bfloat16/float16), ``weight`` [H] (any of those dtypes).
    Returns y = x / sqrt(mean(x^2, -1) + eps) * weight, computed in float32, in ``x.dtype``.
    NPU: ``torch_npu.npu_rms_norm(x, gamma, epsilon)`` (output 0 of (y, rstd)).
    Raises TypeError for a non-float ``x``/``weight``, ValueError when ``weight`` is not [H] or
    ``eps`` < 0.
    """
    if eager_direct(x, weight):
        return _rms_norm_impl(x, weight, float(eps))
    return torch.ops.ascend.rms_norm(x, weight, float(eps))


def add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    """Fused residual add + RMSNorm (vLLM fused_add_rms_norm semantics, out of place).

    Shapes: ``x``, ``residual`` [..., H] same dtype; ``weight`` [H].
    Returns ``(out, new_residual)`` with new_residual = x + residual (rounded to x.dtype) and
    out = rms_norm(new_residual, weight, eps).
    NPU: ``torch_npu.npu_add_rms_norm(x1, x2, gamma, epsilon)`` -> (y, rstd, x_sum).
    Raises TypeError/ValueError naming the argument on dtype or shape mismatch.
    """
    if eager_direct(x, residual, weight):
        return _add_rms_norm_impl(x, residual, weight, float(eps))
    return torch.ops.ascend.add_rms_norm(x, residual, weight, float(eps))
