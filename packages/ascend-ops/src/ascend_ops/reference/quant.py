# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Reference int8 quantization kernels: static and per-token dynamic activation quantization and
the int8 x int8 matmul with dequantization (the semantics of torch_npu ``npu_quantize``,
``npu_dynamic_quant`` and ``npu_quant_matmul``, torch-npu 2.13.0 ``_op_plugin_docs.py``).

Written for readability: the integer products are accumulated exactly (float64 holds every
int8 x int8 sum of up to 2**37 terms exactly), quantized values are rounded half to even and
saturated to [-128, 127].
"""

from __future__ import annotations

import torch

INT8_MIN, INT8_MAX = -128, 127


def _round_sat(v: torch.Tensor) -> torch.Tensor:
    return torch.round(v).clamp(INT8_MIN, INT8_MAX).to(torch.int8)


def quantize(x: torch.Tensor, scales: torch.Tensor, zero_points: torch.Tensor | None) -> torch.Tensor:
    """int8 ``round(x * scales + zero_points)`` along the last dim (npu_quantize, div_mode=False)."""
    v = x.double() * scales.double()
    if zero_points is not None:
        v = v + zero_points.double()
    return _round_sat(v)


def dynamic_quant(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token symmetric quantization: ``scale = max|x_row| / 127``, ``y = round(x / scale)``.

    Returns ``(y int8 like x, scale float32 of shape x.shape[:-1])``; an all-zero row gets scale 0
    and y 0.
    """
    xd = x.double()
    scale = xd.abs().amax(-1) / INT8_MAX
    safe = torch.where(scale == 0, torch.ones_like(scale), scale)
    return _round_sat(xd / safe.unsqueeze(-1)), scale.float()


def quant_matmul(x1: torch.Tensor, x2: torch.Tensor, scale: torch.Tensor,
                 pertoken_scale: torch.Tensor | None, bias: torch.Tensor | None,
                 output_dtype: torch.dtype) -> torch.Tensor:
    """``((x1 @ x2 + bias) * scale * pertoken_scale[:, None])`` in ``output_dtype``.

    ``x1`` int8 [M, K], ``x2`` int8 [K, N], ``scale`` float [N] or [1], ``pertoken_scale``
    float [M] or None, ``bias`` int32 [N] or None (added to the int32 accumulator).
    """
    acc = x1.double() @ x2.double()
    if bias is not None:
        acc = acc + bias.double()
    out = acc * scale.double()
    if pertoken_scale is not None:
        out = out * pertoken_scale.double().unsqueeze(-1)
    return out.to(output_dtype)
