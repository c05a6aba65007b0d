# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Zeroing newly allocated KV blocks through the Ascend attention backends.

The scheduler lists the KV-manager blocks a step must zero before the model reads them
(``SchedulerOutput.new_block_ids_to_zero``: models whose caches must start clean, e.g. hybrid
models with an fp8 KV cache). vLLM zeroes them with ``KVBlockZeroer`` (``vllm/v1/worker/utils.py``,
a Triton kernel over vLLM's per-block page layout), which Model Runner V2 calls through
``self.kv_block_zeroer.zero_block_ids`` built by ``_init_kv_zero_meta``
(``vllm/v1/worker/gpu/model_runner.py``). The Ascend backends keep each layer's slab as separate
K and V caches, so our runner installs :class:`BackendKVBlockZeroer`, which routes the request
here instead (docs/model-runner-v2.md).
"""

from __future__ import annotations

from typing import Any

import torch
from vllm.v1.kv_cache_interface import FullAttentionSpec


def zero_block_ids(kv_cache_config: Any, forward_context: dict[str, Any],
                   block_ids: list[int]) -> None:
    """Zero the attention KV blocks ``block_ids`` of every layer, in every mode.

    Args:
        kv_cache_config: vLLM's ``KVCacheConfig`` (``num_blocks``, ``kv_cache_groups``); only
            groups of a ``FullAttentionSpec`` are zeroed.
        forward_context: layer name -> attention layer
            (``compilation_config.static_forward_context``); a layer's ``kv_cache`` tensor has
            kernel blocks on dim 0.
        block_ids: KV-manager block ids. A layer whose cache is split into smaller kernel blocks
            holds ``ratio = kv_cache.shape[0] // num_blocks`` of them per manager block (vLLM
            ``KVBlockZeroer``), so manager block ``b`` is kernel blocks
            ``b * ratio .. b * ratio + ratio - 1``.

    Zeroing is asked of the layer's backend class when it offers
    ``zero_kv_cache_blocks(kv_cache, kernel_block_ids, layer)`` (int64 ids on the cache's
    device); other backends get those dim-0 rows zeroed. A cache shared by several layers is
    zeroed once.
    """
    if not block_ids:
        return
    ids = torch.tensor(block_ids, dtype=torch.long)
    num_blocks = kv_cache_config.num_blocks
    seen: set[int] = set()
    for group in kv_cache_config.kv_cache_groups:
        if not isinstance(group.kv_cache_spec, FullAttentionSpec):
            continue
        for layer_name in group.layer_names:
            layer = forward_context.get(layer_name)
            kv = getattr(layer, "kv_cache", None)
            if not isinstance(kv, torch.Tensor) or kv.numel() == 0 or kv.data_ptr() in seen:
                continue
            seen.add(kv.data_ptr())
            ratio = max(kv.shape[0] // num_blocks, 1)
            kernel_ids = (ids[:, None] * ratio + torch.arange(ratio)).reshape(-1)
            kernel_ids = kernel_ids.to(kv.device)
            get_backend = getattr(layer, "get_attn_backend", None)
            backend = get_backend() if callable(get_backend) else None
            zero = getattr(backend, "zero_kv_cache_blocks", None)
            if zero is not None:
                zero(kv, kernel_ids, layer)
            else:
                kv.index_fill_(0, kernel_ids, 0)


class BackendKVBlockZeroer:
    """Stands in for vLLM's ``KVBlockZeroer`` on a Model Runner V2 runner (same
    ``zero_block_ids(block_ids)`` call), zeroing through :func:`zero_block_ids` with the
    runner's current ``kv_cache_config`` and forward context."""

    def __init__(self, runner: Any) -> None:
        self._runner = runner

    def zero_block_ids(self, block_ids: list[int]) -> None:
        runner = self._runner
        zero_block_ids(runner.kv_cache_config,
                       runner.compilation_config.static_forward_context, block_ids)
