# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""RMSNorm references (semantics of torch_npu.npu_rms_norm / npu_add_rms_norm)."""

from __future__ import annotations

import torch


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """y = x / sqrt(mean(x^2, -1) + eps) * weight, in float32 (or wider), returned in x.dtype."""
    acc = torch.promote_types(x.dtype, torch.float32)
    xf = x.to(acc)
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (xf * rstd * weight.to(acc)).to(x.dtype)


def add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """new_residual = x + residual (rounded to x.dtype); returns (rms_norm(new_residual), new_residual)."""
    acc = torch.promote_types(x.dtype, torch.float32)
    new_residual = (x.to(acc) + residual.to(acc)).to(x.dtype)
    return rms_norm(new_residual, weight, eps), new_residual
