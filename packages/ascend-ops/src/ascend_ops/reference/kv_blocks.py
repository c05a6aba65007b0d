# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Block-level KV access reference over the Ascend paged layout: one layer's separate key and
value caches ``[num_blocks, block_size, num_kv_heads, D]`` (the dense backends' key / value, or
MLA's latent ``kv_c`` / rope ``k_pe`` with one head), as the attention backends reinterpret
vLLM's per-layer slab (vllm_ascend_attention/kv_layout.py in this repository's
packages/ascend-attention: consecutive contiguous part caches).

A block's buffer row is its key page ``key_cache[b]`` (block_size * H * Dk elements, row-major)
followed by its value page ``value_cache[b]``. The oracle functions go block by block; the
vectorised helpers :func:`gather_blocks` / :func:`scatter_blocks` (whole-index ``index_select``
/ ``index_copy_``, the calls vllm-ascend's KV connectors make on each layer's K and V caches:
vllm_ascend/distributed/kv_transfer/kv_p2p/mooncake_connector.py@182b75e,
``reformat_kv_cache_hybrid_linear_torch``) serve the NPU and native branches.
"""

from __future__ import annotations

import torch


def _page(cache: torch.Tensor) -> int:
    return cache.shape[1] * cache.shape[2] * cache.shape[3]


def _copyable(t: torch.Tensor) -> torch.Tensor:
    """float8 as its bytes (aten's CPU ``index_copy_`` has no float8 kernel; a copy moves bits)."""
    return t.view(torch.uint8) if t.element_size() == 1 else t


def read_kv_blocks(key_cache: torch.Tensor, value_cache: torch.Tensor,
                   block_ids: torch.Tensor) -> torch.Tensor:
    """[len(block_ids), block_size*H*(Dk+Dv)]: row i = cat(key_cache[ids[i]], value_cache[ids[i]])."""
    kw, vw = _page(key_cache), _page(value_cache)
    out = torch.empty(block_ids.shape[0], kw + vw, dtype=key_cache.dtype)
    for i, b in enumerate(block_ids.tolist()):
        out[i, :kw] = key_cache[b].reshape(-1)
        out[i, kw:] = value_cache[b].reshape(-1)
    return out


def write_kv_blocks(blocks: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                    block_ids: torch.Tensor) -> None:
    """The inverse: ``key_cache[ids[i]]`` / ``value_cache[ids[i]]`` from row i (in place)."""
    kw = _page(key_cache)
    for i, b in enumerate(block_ids.tolist()):
        key_cache[b] = blocks[i, :kw].view(key_cache.shape[1:])
        value_cache[b] = blocks[i, kw:].view(value_cache.shape[1:])


def gather_blocks(key_cache: torch.Tensor, value_cache: torch.Tensor,
                  block_ids: torch.Tensor) -> torch.Tensor:
    """:func:`read_kv_blocks` as two ``index_select`` calls and one concatenation."""
    ids = block_ids.to(torch.int64)
    n = ids.shape[0]
    return torch.cat((key_cache.index_select(0, ids).reshape(n, _page(key_cache)),
                      value_cache.index_select(0, ids).reshape(n, _page(value_cache))), dim=1)


def scatter_blocks(blocks: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                   block_ids: torch.Tensor) -> None:
    """:func:`write_kv_blocks` as two ``index_copy_`` calls (int64 index, aten's rule)."""
    ids = block_ids.to(torch.int64)
    n, kw = ids.shape[0], _page(key_cache)
    src = _copyable(blocks)
    _copyable(key_cache).index_copy_(0, ids, src[:, :kw].reshape(n, *key_cache.shape[1:]))
    _copyable(value_cache).index_copy_(0, ids, src[:, kw:].reshape(n, *value_cache.shape[1:]))
