# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""int8 quantization ops: ``torch.ops.ascend.quantize``, ``dynamic_quant`` and ``quant_matmul``.

They are the three steps of an Ascend W8A8 linear layer (msModelSlim ``W8A8`` / ``W8A8_DYNAMIC``
checkpoints): quantize the activation (statically with calibrated scale/offset, or per token),
multiply by the int8 weight with int32 accumulation, dequantize into the model dtype.
"""

from __future__ import annotations

import torch

from ascend_ops._dispatch import eager_direct
from ascend_ops.checks import quant as _checks_quant
from ascend_ops.families import FAMILIES

_QUANT = FAMILIES["quant"]


def _quantize_impl(x: torch.Tensor, scales: torch.Tensor,
                   zero_points: torch.Tensor | None) -> torch.Tensor:
    _checks_quant.quantize(x, scales, zero_points)
    return _QUANT.pick("quantize", x).quantize(x, scales, zero_points)


_quantize_op = torch.library.custom_op("ascend::quantize", mutates_args=())(_quantize_impl)


@_quantize_op.register_fake
def _(x, scales, zero_points):
    _checks_quant.quantize(x, scales, zero_points)
    return torch.empty_like(x, dtype=torch.int8)


def _dynamic_quant_impl(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    _checks_quant.dynamic_quant(x)
    return _QUANT.pick("dynamic_quant", x).dynamic_quant(x)


_dynamic_quant_op = torch.library.custom_op("ascend::dynamic_quant", mutates_args=())(
    _dynamic_quant_impl)


@_dynamic_quant_op.register_fake
def _(x):
    _checks_quant.dynamic_quant(x)
    return torch.empty_like(x, dtype=torch.int8), x.new_empty(x.shape[:-1], dtype=torch.float32)


def _quant_matmul_impl(x1: torch.Tensor, x2: torch.Tensor, scale: torch.Tensor,
                       pertoken_scale: torch.Tensor | None, bias: torch.Tensor | None,
                       output_dtype: torch.dtype) -> torch.Tensor:
    _checks_quant.quant_matmul(x1, x2, scale, pertoken_scale, bias, output_dtype)
    return _QUANT.pick("quant_matmul", x1).quant_matmul(x1, x2, scale, pertoken_scale, bias,
                                                     output_dtype)


_quant_matmul_op = torch.library.custom_op("ascend::quant_matmul", mutates_args=())(
    _quant_matmul_impl)


@_quant_matmul_op.register_fake
def _(x1, x2, scale, pertoken_scale, bias, output_dtype):
    _checks_quant.quant_matmul(x1, x2, scale, pertoken_scale, bias, output_dtype)
    return x1.new_empty((x1.shape[0], x2.shape[1]), dtype=output_dtype)


def quantize(x: torch.Tensor, scales: torch.Tensor,
             zero_points: torch.Tensor | None = None) -> torch.Tensor:
    """Static activation quantization: int8 ``round(x * scales + zero_points)``, saturated.

    Shapes: ``x`` [..., H] float32/bfloat16/float16; ``scales`` (the reciprocal of msModelSlim's
    ``input_scale``) and ``zero_points`` (its ``input_offset``) [H] or [1] in ``x.dtype``.
    Returns int8 [..., H]. Rounding half to even, saturation to [-128, 127].
    NPU: ``torch_npu.npu_quantize(x, scales, zero_points, torch.qint8, -1, False)``
    (div_mode=False: multiply; axis=-1).
    Raises TypeError/ValueError naming the argument on a wrong dtype or shape.
    """
    if eager_direct(x, scales, *(t for t in (zero_points,) if t is not None)):
        return _quantize_impl(x, scales, zero_points)
    return torch.ops.ascend.quantize(x, scales, zero_points)


def dynamic_quant(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token symmetric dynamic quantization (each row over the last dim).

    Shapes: ``x`` [..., H] float32/bfloat16/float16 (at least 2-D). Returns ``(y, scale)``:
    ``scale`` float32 [...] = max|x_row| / 127 and ``y`` int8 [..., H] = round(x / scale)
    (an all-zero row gives scale 0 and y 0).
    NPU: ``torch_npu.npu_dynamic_quant(x)`` (dst_type int8, no smooth scales).
    Raises TypeError for a non-float ``x``, ValueError for a 1-D one.
    """
    if eager_direct(x):
        return _dynamic_quant_impl(x)
    return torch.ops.ascend.dynamic_quant(x)


def quant_matmul(x1: torch.Tensor, x2: torch.Tensor, scale: torch.Tensor,
                 pertoken_scale: torch.Tensor | None = None, bias: torch.Tensor | None = None,
                 output_dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """int8 x int8 matmul with int32 accumulation and dequantization.

    Shapes: ``x1`` int8 [M, K] (activations), ``x2`` int8 [K, N] (the weight, transposed),
    ``scale`` float32 [N] or [1] (per output channel: msModelSlim ``deq_scale`` or
    ``weight_scale``), ``pertoken_scale`` float32 [M] or None (from :func:`dynamic_quant`),
    ``bias`` int32 [N] or None (msModelSlim ``quant_bias``, added to the accumulator).
    Returns ``((x1 @ x2 + bias) * scale * pertoken_scale[:, None])`` as ``output_dtype``
    [M, N] (float16/bfloat16; float32 on the CPU backends only).
    NPU: ``torch_npu.npu_quant_matmul(x1, x2, scale, pertoken_scale=..., bias=...,
    output_dtype=...)``.
    Raises TypeError/ValueError naming the argument on a wrong dtype or shape.
    """
    tensors = [t for t in (x1, x2, scale, pertoken_scale, bias) if t is not None]
    if eager_direct(*tensors):
        return _quant_matmul_impl(x1, x2, scale, pertoken_scale, bias, output_dtype)
    return torch.ops.ascend.quant_matmul(x1, x2, scale, pertoken_scale, bias, output_dtype)
