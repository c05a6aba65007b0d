# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Argument validation of the per-layer ops (RMSNorm, SwiGLU, rotary embedding): errors name the
argument and what to change."""

from __future__ import annotations

import math

from ascend_ops.checks.tensors import float_tensor, index_tensor, same_dtype, same_shape


def rms_norm(x, weight, eps) -> None:
    float_tensor("x", x)
    float_tensor("weight", weight, 1)
    if x.dim() < 1 or weight.shape[0] != x.shape[-1]:
        raise ValueError(
            f"weight shape {tuple(weight.shape)} must be [H] with H = x.shape[-1] ({tuple(x.shape)})"
        )
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps}")


def add_rms_norm(x, residual, weight, eps) -> None:
    rms_norm(x, weight, eps)
    float_tensor("residual", residual)
    same_shape("residual", residual, "x", x)
    same_dtype("residual", residual, "x", x)


def swiglu(x) -> None:
    float_tensor("x", x)
    if x.dim() < 1 or x.shape[-1] % 2:
        raise ValueError(f"x last dim must be even (gate and up halves), got shape {tuple(x.shape)}")


def rotary(positions, query, key, head_size, cos_sin_cache) -> None:
    index_tensor("positions", positions, 1)
    float_tensor("query", query)
    float_tensor("key", key)
    float_tensor("cos_sin_cache", cos_sin_cache, 2)
    same_dtype("key", key, "query", query)
    t = positions.shape[0]
    if head_size <= 0:
        raise ValueError(f"head_size must be positive, got {head_size}")
    for name, x in (("query", query), ("key", key)):
        if x.dim() < 2 or x.shape[0] != t or math.prod(x.shape[1:]) % head_size:
            raise ValueError(
                f"{name} shape {tuple(x.shape)} must be [T, H*head_size] (T={t}, head_size={head_size})"
            )
    rot = cos_sin_cache.shape[1]
    if rot % 2 or rot > head_size or rot == 0:
        raise ValueError(
            f"cos_sin_cache last dim (rotary_dim={rot}) must be even and <= head_size ({head_size})"
        )


def rotary_values(positions, cos_sin_cache) -> None:
    if positions.numel() and (
        int(positions.min()) < 0 or int(positions.max()) >= cos_sin_cache.shape[0]
    ):
        raise ValueError(
            f"positions must lie in [0, {cos_sin_cache.shape[0]}) (cos_sin_cache rows); "
            f"got range [{int(positions.min())}, {int(positions.max())}]"
        )
