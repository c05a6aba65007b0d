# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Native CPU branch of the int8 ops: vectorised torch (no ``_C`` kernel).

The int8 x int8 product uses ``torch._int_mm`` (exact int32 accumulation, oneDNN on x86); a
build whose ``_int_mm`` refuses the shapes falls back to an exact float64 matmul. The
dequantization is float32 math.
Semantics as in ``ascend_ops.reference.quant``.
"""

from __future__ import annotations

import torch

from ascend_ops.reference.quant import INT8_MAX, INT8_MIN


def quantize(x, scales, zero_points):
    v = x.float() * scales.float()
    if zero_points is not None:
        v = v + zero_points.float()
    return torch.round(v).clamp_(INT8_MIN, INT8_MAX).to(torch.int8)


def dynamic_quant(x):
    xf = x.float()
    scale = xf.abs().amax(-1) / INT8_MAX
    safe = torch.where(scale == 0, torch.ones_like(scale), scale)
    y = torch.round(xf / safe.unsqueeze(-1)).clamp_(INT8_MIN, INT8_MAX).to(torch.int8)
    return y, scale


def _int8_gemm(x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    try:
        return torch._int_mm(x1.contiguous(), x2)
    except RuntimeError:
        return (x1.double() @ x2.double()).to(torch.int32)


def quant_matmul(x1, x2, scale, pertoken_scale, bias, output_dtype):
    acc = _int8_gemm(x1, x2)
    if bias is not None:
        acc = acc + bias
    out = acc.float() * scale.float()
    if pertoken_scale is not None:
        out = out * pertoken_scale.float().unsqueeze(-1)
    return out.to(output_dtype)
