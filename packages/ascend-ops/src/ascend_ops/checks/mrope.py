# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Argument validation of multimodal rotary embedding (``ascend_ops.ops.mrope``): errors name the
argument and what to change."""

from __future__ import annotations

import math

from ascend_ops.checks.tensors import float_tensor, index_tensor, same_dtype


def mrope(positions, query, key, head_size, cos_sin_cache, mrope_section) -> None:
    index_tensor("positions", positions, 2)
    if positions.shape[0] != 3:
        raise ValueError(f"positions must be [3, T] (temporal, height, width rows), got shape "
                         f"{tuple(positions.shape)}; 1-D positions are plain RoPE: use rotary_embedding")
    float_tensor("query", query)
    float_tensor("key", key)
    float_tensor("cos_sin_cache", cos_sin_cache, 2)
    same_dtype("key", key, "query", query)
    t = positions.shape[1]
    if head_size <= 0:
        raise ValueError(f"head_size must be positive, got {head_size}")
    for name, x in (("query", query), ("key", key)):
        if x.dim() < 2 or x.shape[0] != t or math.prod(x.shape[1:]) % head_size:
            raise ValueError(
                f"{name} shape {tuple(x.shape)} must be [T, H*head_size] (T={t}, head_size={head_size})")
    rot = cos_sin_cache.shape[1]
    if rot % 2 or rot > head_size or rot == 0:
        raise ValueError(
            f"cos_sin_cache last dim (rotary_dim={rot}) must be even and <= head_size ({head_size})")
    section = list(mrope_section)
    if len(section) != 3 or any(s < 0 for s in section) or sum(section) * 2 != rot:
        raise ValueError(f"mrope_section must be 3 non-negative ints summing to rotary_dim / 2 "
                         f"({rot // 2}), got {section}")


def mrope_values(positions, cos_sin_cache) -> None:
    """Positions inside the cache (CPU branches read them; the NPU operator bounds-checks)."""
    if positions.numel() and (
        int(positions.min()) < 0 or int(positions.max()) >= cos_sin_cache.shape[0]
    ):
        raise ValueError(
            f"positions must lie in [0, {cos_sin_cache.shape[0]}) (cos_sin_cache rows); "
            f"got range [{int(positions.min())}, {int(positions.max())}]"
        )
