# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Argument validation of block-level KV access (``ascend_ops.ops.kv_blocks``): errors name the
argument and what to change."""

from __future__ import annotations

import torch

from ascend_ops.checks.tensors import index_tensor, same_device, tensor


def caches(key_cache, value_cache, block_ids) -> None:
    tensor("key_cache", key_cache, 4)
    tensor("value_cache", value_cache, 4)
    if not (key_cache.is_floating_point() and value_cache.is_floating_point()):
        raise TypeError(f"key_cache/value_cache must be floating-point caches, got "
                        f"{key_cache.dtype}/{value_cache.dtype}")
    if value_cache.dtype != key_cache.dtype:
        raise TypeError(f"value_cache dtype {value_cache.dtype} must equal key_cache dtype "
                        f"{key_cache.dtype} (one layer's slab holds both)")
    same_device("value_cache", value_cache, "key_cache", key_cache)
    if key_cache.shape[:3] != value_cache.shape[:3]:
        raise ValueError(f"key_cache {tuple(key_cache.shape)} and value_cache "
                         f"{tuple(value_cache.shape)} must share [num_blocks, block_size, num_kv_heads]")
    index_tensor("block_ids", block_ids, 1)
    same_device("block_ids", block_ids, "key_cache", key_cache)


def block_width(key_cache, value_cache) -> int:
    """Elements of one block in the buffer: its key page then its value page."""
    return key_cache.shape[1] * key_cache.shape[2] * (key_cache.shape[3] + value_cache.shape[3])


def buffer(blocks, key_cache, value_cache, block_ids) -> None:
    tensor("blocks", blocks, 2)
    width = block_width(key_cache, value_cache)
    if blocks.dtype != key_cache.dtype:
        raise TypeError(f"blocks dtype {blocks.dtype} must equal the caches' dtype {key_cache.dtype}")
    same_device("blocks", blocks, "key_cache", key_cache)
    if tuple(blocks.shape) != (block_ids.shape[0], width):
        raise ValueError(f"blocks must be [len(block_ids)={block_ids.shape[0]}, {width}] (one row per "
                         f"block: its key page then its value page), got {tuple(blocks.shape)}")


def block_values(block_ids: torch.Tensor, num_blocks: int, distinct: bool) -> None:
    """Ids inside the cache (and distinct, for a write); CPU branches read them."""
    if block_ids.numel() == 0:
        return
    lo, hi = int(block_ids.min()), int(block_ids.max())
    if lo < 0 or hi >= num_blocks:
        raise ValueError(f"block_ids must lie in [0, {num_blocks}) (key_cache num_blocks); got range "
                         f"[{lo}, {hi}]")
    if distinct and torch.unique(block_ids).numel() != block_ids.numel():
        raise ValueError("block_ids must be distinct for write_kv_blocks (a repeated block would "
                         "be written twice, in no defined order)")
