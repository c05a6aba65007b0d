# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Our out-of-tree ``MultiHeadLatentAttentionWrapper`` (vLLM PluggableLayer
``multi_head_latent_attention``, ``vllm/model_executor/layers/mla.py``).

Dense MLA models run the upstream layer unchanged. For a sparse (DSA) layer the upstream
``Indexer`` (FP8 quantization through a CUDA op, uint8 key cache, ``SparseAttnIndexer`` with no
out-of-tree path) is replaced, at construction, by
:class:`vllm_ascend_attention.sparse_indexer.AscendLightningIndexer`, which takes over its weights.
Upstream's ``forward`` then runs as it is: it calls ``self.indexer(hidden_states, q_c, positions,
self.indexer_rope_emb)`` and ``self.mla_attn.impl.record_logical_topk_ready()``
(``AscendSFAImpl``).
"""

from __future__ import annotations

from typing import Any

from vllm.config import get_current_vllm_config
from vllm.model_executor.layers.mla import MultiHeadLatentAttentionWrapper


class AscendMultiHeadLatentAttentionWrapper(MultiHeadLatentAttentionWrapper):
    """vLLM's MLA wrapper with the DSA indexer on Ascend operators (module docstring)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        upstream: Any = getattr(self, "indexer", None)
        if not (self.is_sparse and upstream is not None):
            return
        # imported here: it imports vLLM's DeepSeek model module, which dense models never need
        from vllm_ascend_attention.sparse_indexer import AscendLightningIndexer

        if not isinstance(upstream, AscendLightningIndexer):
            vllm_config = get_current_vllm_config()
            self.indexer = AscendLightningIndexer(upstream, vllm_config.model_config.dtype, vllm_config)


def register_oot() -> bool:
    """Make vLLM build :class:`AscendMultiHeadLatentAttentionWrapper` for every MLA wrapper.

    Idempotent; returns whether it registered now. Raises RuntimeError when another plugin holds
    the slot (vLLM keeps one out-of-tree class per layer name).
    """
    from vllm.model_executor.custom_op import op_registry_oot

    slot = MultiHeadLatentAttentionWrapper.__name__
    holder = op_registry_oot.get(slot)
    if holder is AscendMultiHeadLatentAttentionWrapper:
        return False
    if holder is not None:
        raise RuntimeError(f"vLLM layer {slot!r} is already replaced out of tree by "
                           f"{holder.__module__}.{holder.__qualname__}; the Ascend sparse MLA path "
                           "cannot register its wrapper")
    MultiHeadLatentAttentionWrapper.register_oot(AscendMultiHeadLatentAttentionWrapper)
    return True
