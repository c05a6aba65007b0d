# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Grouped int8 matmul of MoE experts: ``torch.ops.ascend.grouped_quant_matmul``.

The expert step of an Ascend W8A8_DYNAMIC MoE layer (msModelSlim checkpoints): the routed rows,
quantized per token by ``dynamic_quant``, times each expert's int8 weight with int32
accumulation, dequantized by the expert's per-output-channel weight scale and the rows'
per-token scales. NPU: torch_npu ``npu_grouped_matmul`` (``ascend_ops.npu.quant_moe``);
native: per-expert ``torch._int_mm``; reference: float64 (``ascend_ops.reference.quant_moe``).
"""

from __future__ import annotations

import torch

from ascend_ops.checks import tensors as _checks
from ascend_ops.checks.quant import HALF_OUT
from ascend_ops.families import FAMILIES

_QUANT_MOE = FAMILIES["quant_moe"]


def check_grouped_quant_matmul(x, weight, scale, pertoken_scale, group_list, output_dtype) -> None:
    for name, t, ndim in (("x", x, 2), ("weight", weight, 3)):
        _checks.tensor(name, t, ndim)
        if t.dtype != torch.int8:
            raise TypeError(f"{name} must be int8, got {t.dtype}; quantize it first")
    m, k = x.shape
    e, wk, n = weight.shape
    if wk != k:
        raise ValueError(f"weight must be [E, K={k}, N] to match x [M, K], got {tuple(weight.shape)}")
    _checks.tensor("scale", scale, 2)
    if scale.dtype != torch.float32 or tuple(scale.shape) != (e, n):
        raise ValueError(f"scale must be float32 [E={e}, N={n}] (per expert and output channel), "
                         f"got {tuple(scale.shape)} {scale.dtype}")
    _checks.tensor("pertoken_scale", pertoken_scale, 1)
    if pertoken_scale.dtype != torch.float32 or pertoken_scale.shape[0] != m:
        raise ValueError(f"pertoken_scale must be float32 [M={m}], got "
                         f"{tuple(pertoken_scale.shape)} {pertoken_scale.dtype}")
    _checks.index_tensor("group_list", group_list, ndim=1)
    if group_list.shape[0] != e:
        raise ValueError(f"group_list needs one row count per expert ({e}), got {group_list.shape[0]}")
    if output_dtype not in (*HALF_OUT, torch.float32):
        raise ValueError(f"output_dtype must be float16, bfloat16 or float32, got {output_dtype}")


@torch.library.custom_op("ascend::grouped_quant_matmul", mutates_args=())
def _gqmm_op(x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor,
             pertoken_scale: torch.Tensor, group_list: torch.Tensor,
             output_dtype: torch.dtype) -> torch.Tensor:
    return _QUANT_MOE.pick("grouped_quant_matmul", x).grouped_quant_matmul(
        x, weight, scale, pertoken_scale, group_list, output_dtype)


@_gqmm_op.register_fake
def _(x, weight, scale, pertoken_scale, group_list, output_dtype):
    return x.new_empty((x.shape[0], weight.shape[2]), dtype=output_dtype)


def grouped_quant_matmul(x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor,
                         pertoken_scale: torch.Tensor, group_list: torch.Tensor,
                         output_dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """Per-expert int8 matmul over expert-contiguous rows with per-token dequantization.

    Shapes: ``x`` int8 [M, K] (rows sorted by expert, from ``moe_init_routing`` then
    ``dynamic_quant``), ``weight`` int8 [E, K, N] (a transposed view of vLLM's [E, N, K] expert
    layout is fine), ``scale`` float32 [E, N] (msModelSlim ``weight_scale`` per expert and output
    channel), ``pertoken_scale`` float32 [M] (from ``dynamic_quant``), ``group_list`` [E] int row
    counts (sum <= M). Returns ``output_dtype`` [M, N] with
    ``out[r] = (x[r] @ weight[e]) * scale[e] * pertoken_scale[r]`` for row r of expert e (int32
    accumulation); rows past the counts' sum are zero on CPU, undefined on NPU.
    ``output_dtype`` float16/bfloat16 (float32 on the CPU backends only).
    NPU: ``torch_npu.npu_grouped_matmul`` per-token quantization (formula 3 of its docs).
    Raises TypeError/ValueError naming the argument on a wrong dtype or shape.
    """
    check_grouped_quant_matmul(x, weight, scale, pertoken_scale, group_list, output_dtype)
    return torch.ops.ascend.grouped_quant_matmul(x, weight, scale, pertoken_scale, group_list,
                                                 output_dtype)
