# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Block-level KV access for KV connectors and offloading: ``torch.ops.ascend.read_kv_blocks``
(whole blocks of one layer's key and value caches into one contiguous buffer) and
``torch.ops.ascend.write_kv_blocks`` (back, in place)."""

from __future__ import annotations

import torch

from ascend_ops._dispatch import eager_direct
from ascend_ops.checks import kv_blocks as _checks
from ascend_ops.families import FAMILIES

_KV_BLOCKS = FAMILIES["kv_blocks"]


def _read_impl(key_cache: torch.Tensor, value_cache: torch.Tensor,
               block_ids: torch.Tensor) -> torch.Tensor:
    _checks.caches(key_cache, value_cache, block_ids)
    return _KV_BLOCKS.pick("read_kv_blocks", key_cache).read_kv_blocks(key_cache, value_cache,
                                                                       block_ids)


_read_op = torch.library.custom_op("ascend::read_kv_blocks", mutates_args=())(_read_impl)


@_read_op.register_fake
def _(key_cache, value_cache, block_ids):
    _checks.caches(key_cache, value_cache, block_ids)
    return key_cache.new_empty(block_ids.shape[0], _checks.block_width(key_cache, value_cache))


def _write_impl(blocks: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                block_ids: torch.Tensor) -> None:
    _checks.caches(key_cache, value_cache, block_ids)
    _checks.buffer(blocks, key_cache, value_cache, block_ids)
    _KV_BLOCKS.pick("write_kv_blocks", key_cache).write_kv_blocks(blocks, key_cache, value_cache,
                                                                  block_ids)


_write_op = torch.library.custom_op("ascend::write_kv_blocks",
                                    mutates_args=("key_cache", "value_cache"))(_write_impl)


@_write_op.register_fake
def _(blocks, key_cache, value_cache, block_ids):
    _checks.caches(key_cache, value_cache, block_ids)
    _checks.buffer(blocks, key_cache, value_cache, block_ids)


def read_kv_blocks(key_cache: torch.Tensor, value_cache: torch.Tensor,
                   block_ids: torch.Tensor) -> torch.Tensor:
    """Whole KV-cache blocks of one layer, copied into one contiguous buffer.

    Layout (the Ascend attention backends' view of a layer's slab, see packages/ascend-attention
    ``vllm_ascend_attention/kv_layout.py``): ``key_cache`` [num_blocks, block_size, Hk, Dk] and
    ``value_cache`` [num_blocks, block_size, Hk, Dv] (dense attention: key and value; MLA:
    latent ``kv_c`` [.., 1, kv_lora_rank] and rope ``k_pe`` [.., 1, rope_dim]); any floating
    dtype (float8 caches included), one for both. ``block_ids`` int32/int64 [n] kernel-block
    indices (vLLM's block ids times the kernel blocks per manager block), on the caches' device.
    Returns [n, block_size*Hk*(Dk+Dv)] in the caches' dtype: row i is block ``block_ids[i]``'s
    key page then its value page, each row-major (``write_kv_blocks`` takes it back).
    NPU: ``index_select`` along the block dim of each cache, then one concatenation (aten, the
    calls vllm-ascend's Mooncake connector makes; no torch_npu operator). CPU: the same
    (native), or a per-block loop (reference).
    Raises TypeError/ValueError naming the argument; ValueError for a block id outside
    [0, num_blocks) on the CPU branches (the NPU index kernels bound-check on the device).
    """
    if eager_direct(key_cache, value_cache, block_ids):
        return _read_impl(key_cache, value_cache, block_ids)
    return torch.ops.ascend.read_kv_blocks(key_cache, value_cache, block_ids)


def write_kv_blocks(blocks: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                    block_ids: torch.Tensor) -> None:
    """Write whole blocks back into one layer's key and value caches (in place).

    ``blocks`` [n, block_size*Hk*(Dk+Dv)] in the caches' dtype and on their device, rows as
    ``read_kv_blocks`` returns them; ``key_cache`` / ``value_cache`` / ``block_ids`` as there,
    the ids distinct. Block ``block_ids[i]`` of both caches becomes row i; no other block
    changes.
    NPU: ``index_copy_`` along the block dim of each cache (int64 ids; aten). CPU: the same
    (native), or a per-block loop (reference).
    Raises TypeError/ValueError naming the argument; ValueError for an id outside
    [0, num_blocks) or a repeated id on the CPU branches (nothing is written).
    """
    if eager_direct(blocks, key_cache, value_cache, block_ids):
        _write_impl(blocks, key_cache, value_cache, block_ids)
        return
    torch.ops.ascend.write_kv_blocks(blocks, key_cache, value_cache, block_ids)
