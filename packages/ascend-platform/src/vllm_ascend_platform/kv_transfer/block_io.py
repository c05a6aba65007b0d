# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The layout-aware seam for block-level KV access by KV connectors (docs/pd-disaggregation.md).

vLLM hands each attention layer a logical view of its KV slab, ``[num_blocks, num_kv_heads,
block_size, Dk + Dv]`` (dense) or ``[num_blocks, block_size, kv_lora_rank + rope_dim]`` (MLA),
and vLLM's connectors index that view by block and slot
(``vllm/distributed/kv_transfer/kv_connector/v1/example_connector.py``). The Ascend attention
backends reinterpret the same slab as separate contiguous part caches (packages/ascend-attention
``vllm_ascend_attention/kv_layout.py``), so indexing vLLM's view reads other bytes. Connectors
we serve go through here instead: the layer's backend splits its cache
(``kv_cache_parts(kv_cache, layer)``) and whole blocks move with ``ascend_ops.read_kv_blocks`` /
``ascend_ops.write_kv_blocks`` (aten index ops on the NPU, checked by the simulated NPU).

Between the block rows of those ops and a connector's wire format this module converts to
vLLM's per-token layout, the one ``ExampleConnector`` stores: token ``t`` of the transferred
blocks is ``cat(key[t], value[t])`` along the channel dim, ``[n_tokens, num_kv_heads, Dk + Dv]``
(dense) or ``[n_tokens, kv_lora_rank + rope_dim]`` (MLA). Files written on an Ascend instance
hold what a GPU instance's ``ExampleConnector`` would write for the same KV.
"""

from __future__ import annotations

from typing import Any

import ascend_ops
import torch


class KVLayoutError(TypeError):
    """An attention layer whose backend cannot split its KV cache into part caches."""


def layer_parts(layer: Any, kv_cache: torch.Tensor,
                layer_name: str = "?") -> tuple[torch.Tensor, torch.Tensor]:
    """The layer's two part caches, each ``[num_blocks, block_size, H, D]`` (no copy).

    Raises:
        KVLayoutError: the layer's attention backend offers no ``kv_cache_parts`` (not one of
            the Ascend backends), naming the layer and the backend.
    """
    get_backend = getattr(layer, "get_attn_backend", None)
    backend = get_backend() if callable(get_backend) else None
    parts = getattr(backend, "kv_cache_parts", None)
    if parts is None:
        raise KVLayoutError(
            f"layer {layer_name!r}: attention backend "
            f"{getattr(backend, '__name__', backend)!r} has no kv_cache_parts(); KV connectors on "
            "Ascend need the ASCEND_ATTN or ASCEND_MLA backend")
    key_cache, value_cache = parts(kv_cache, layer)
    return key_cache, value_cache


def kernel_block_ids(block_ids: torch.Tensor, block_size: int,
                     key_cache: torch.Tensor) -> torch.Tensor:
    """Kernel-block ids (int64, on the cache's device) of KV-manager blocks ``block_ids``.

    A manager block of ``block_size`` tokens is ``ratio = block_size // kernel_block_size``
    consecutive kernel blocks (``b * ratio .. b * ratio + ratio - 1``, as vLLM's
    ``KVBlockZeroer`` in ``vllm/v1/worker/utils.py``); ``key_cache`` is ``[num_kernel_blocks,
    kernel_block_size, H, D]``.

    Raises:
        ValueError: ``block_size`` is not a multiple of the kernel block size.
    """
    kernel = key_cache.shape[1]
    if block_size % kernel:
        raise ValueError(f"block_size {block_size} is not a multiple of the kernel block size "
                         f"{kernel}")
    ratio = block_size // kernel
    ids = block_ids.to(torch.int64).cpu()
    ids = (ids[:, None] * ratio + torch.arange(ratio)).reshape(-1)
    return ids.to(key_cache.device)


def read_tokens(key_cache: torch.Tensor, value_cache: torch.Tensor,
                kernel_ids: torch.Tensor, mla: bool) -> torch.Tensor:
    """The tokens of kernel blocks ``kernel_ids`` in vLLM's per-token layout, on the caches'
    device: ``[n * kernel_block_size, H, Dk + Dv]``, or ``[.., Dk + Dv]`` for MLA (H == 1)."""
    n = int(kernel_ids.shape[0])
    bs, heads, dk = (int(d) for d in key_cache.shape[1:])
    dv = int(value_cache.shape[3])
    rows = ascend_ops.read_kv_blocks(key_cache, value_cache, kernel_ids)
    kw = bs * heads * dk
    keys = rows[:, :kw].reshape(n, bs, heads, dk)
    values = rows[:, kw:].reshape(n, bs, heads, dv)
    tokens = torch.cat((keys, values), dim=-1).reshape(n * bs, heads, dk + dv)
    return tokens.reshape(n * bs, dk + dv) if mla else tokens


def write_tokens(tokens: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor,
                 kernel_ids: torch.Tensor) -> None:
    """The inverse of :func:`read_tokens`: ``tokens`` (either shape, the caches' dtype, any
    device) become kernel blocks ``kernel_ids`` of both caches; no other block changes.

    Raises:
        ValueError: ``tokens`` does not hold exactly those blocks' tokens.
    """
    n = int(kernel_ids.shape[0])
    bs, heads, dk = (int(d) for d in key_cache.shape[1:])
    dv = int(value_cache.shape[3])
    if tokens.numel() != n * bs * heads * (dk + dv):
        raise ValueError(f"KV of shape {tuple(tokens.shape)} does not fill {n} blocks of "
                         f"{bs} tokens x {heads} heads x {dk + dv} channels")
    per_token = tokens.to(key_cache.device, key_cache.dtype).reshape(n, bs, heads, dk + dv)
    rows = torch.cat((per_token[..., :dk].reshape(n, -1), per_token[..., dk:].reshape(n, -1)),
                     dim=1)
    ascend_ops.write_kv_blocks(rows.contiguous(), key_cache, value_cache, kernel_ids)
