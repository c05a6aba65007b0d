# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Paged KV-cache write reference (semantics of ATB _npu_reshape_and_cache)."""

from __future__ import annotations

import torch


def reshape_and_cache(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
) -> None:
    """Write token t to cache[slot // block_size, slot % block_size]; slots < 0 are skipped.

    Writes through the (possibly strided) cache views in place.
    """
    block_size = key_cache.shape[1]
    slots = slot_mapping.reshape(-1).long()
    keep = (slots >= 0).nonzero().reshape(-1)
    if keep.numel() == 0:
        return
    slots = slots[keep]
    blocks = slots // block_size
    offsets = slots % block_size
    key_cache[blocks, offsets] = key[keep].to(key_cache.dtype)
    value_cache[blocks, offsets] = value[keep].to(value_cache.dtype)
