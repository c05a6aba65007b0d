# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Argument validation of the int8 ops (``ascend_ops.ops.quant``): errors name the argument."""

from __future__ import annotations

import torch

from ascend_ops.checks.tensors import float_tensor, tensor

HALF_OUT = (torch.float16, torch.bfloat16)


def _int8(name: str, t, ndim: int) -> None:
    tensor(name, t, ndim)
    if t.dtype != torch.int8:
        raise TypeError(f"{name} must be int8, got {t.dtype}; quantize it first")


def quantize(x, scales, zero_points) -> None:
    float_tensor("x", x)
    if x.dim() < 1:
        raise ValueError("x must have at least one dim (the quantized channels are the last)")
    h = x.shape[-1]
    for name, t in (("scales", scales), ("zero_points", zero_points)):
        if t is None and name == "zero_points":
            continue
        tensor(name, t, 1)
        if t.dtype != x.dtype or t.shape[0] not in (1, h):
            raise ValueError(f"{name} must be [{h}] or [1] in x's dtype {x.dtype}, got "
                             f"{tuple(t.shape)} {t.dtype}")


def dynamic_quant(x) -> None:
    float_tensor("x", x)
    if x.dim() < 2:
        raise ValueError(f"x must be at least 2-D [tokens, hidden], got shape {tuple(x.shape)}")


def quant_matmul(x1, x2, scale, pertoken_scale, bias, output_dtype) -> None:
    _int8("x1", x1, 2)
    _int8("x2", x2, 2)
    m, k = x1.shape
    if x2.shape[0] != k:
        raise ValueError(f"x2 must be [K={k}, N] (the weight transposed), got {tuple(x2.shape)}")
    n = x2.shape[1]
    tensor("scale", scale, 1)
    if scale.dtype != torch.float32 or scale.shape[0] not in (1, n):
        raise ValueError(f"scale must be float32 [{n}] or [1], got {tuple(scale.shape)} {scale.dtype}")
    if pertoken_scale is not None:
        tensor("pertoken_scale", pertoken_scale, 1)
        if pertoken_scale.dtype != torch.float32 or pertoken_scale.shape[0] != m:
            raise ValueError(f"pertoken_scale must be float32 [{m}], got "
                             f"{tuple(pertoken_scale.shape)} {pertoken_scale.dtype}")
    if bias is not None:
        tensor("bias", bias, 1)
        if bias.dtype != torch.int32 or bias.shape[0] != n:
            raise ValueError(f"bias must be int32 [{n}], got {tuple(bias.shape)} {bias.dtype}")
    if output_dtype not in (*HALF_OUT, torch.float32):
        raise ValueError(f"output_dtype must be float16, bfloat16 or float32, got {output_dtype}")
