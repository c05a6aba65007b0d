# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Argument validation of vision-encoder attention (``ascend_ops.ops.encoder_attention``):
errors name the argument and what to change."""

from __future__ import annotations

from ascend_ops.checks.tensors import float_tensor, index_tensor, same_device, same_dtype


def encoder_attention(query, key, value, cu_seqlens, scale) -> None:
    float_tensor("query", query, 3)
    float_tensor("key", key, 3)
    float_tensor("value", value, 3)
    same_dtype("key", key, "query", query)
    same_dtype("value", value, "query", query)
    if key.shape != value.shape:
        raise ValueError(f"value shape {tuple(value.shape)} must equal key shape {tuple(key.shape)} "
                         "([T, Hk, D])")
    t, hq, d = query.shape
    if key.shape[0] != t or key.shape[2] != d:
        raise ValueError(f"key shape {tuple(key.shape)} must be [T={t}, Hk, D={d}] (self-attention "
                         f"over query's tokens, query shape {tuple(query.shape)})")
    hk = key.shape[1]
    if hk == 0 or hq % hk:
        raise ValueError(f"query heads ({hq}) must be a multiple of key/value heads ({hk})")
    index_tensor("cu_seqlens", cu_seqlens, 1)
    same_device("cu_seqlens", cu_seqlens, "query", query)
    if cu_seqlens.shape[0] < 1:
        raise ValueError("cu_seqlens must be [B+1] cumulative sequence lengths starting at 0")
    if not scale > 0:
        raise ValueError(f"scale must be > 0, got {scale}")


def sequence_ends(ends: list[int], tokens: int) -> None:
    """Host cumulative ends (cu_seqlens[1:]): non-negative, non-decreasing, the last = T."""
    if any(e < 0 for e in ends) or any(b < a for a, b in zip(ends, ends[1:], strict=False)):
        raise ValueError(f"cu_seqlens must be non-decreasing from 0, got ends {ends}")
    if (ends[-1] if ends else 0) != tokens:
        raise ValueError(f"cu_seqlens must end at the token count T={tokens}, got "
                         f"{ends[-1] if ends else 0}")


def cu_seqlens_values(cu_seqlens, ends: list[int]) -> None:
    """A host-readable cu_seqlens starts at 0 and agrees with the given ends."""
    values = [int(v) for v in cu_seqlens.tolist()]
    if values[0] != 0:
        raise ValueError(f"cu_seqlens must start at 0, got {values[0]}")
    if values[1:] != list(ends):
        raise ValueError(f"actual_seq_lengths {list(ends)} must equal cu_seqlens[1:] {values[1:]}")
