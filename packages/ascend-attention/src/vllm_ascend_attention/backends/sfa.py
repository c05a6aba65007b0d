# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Ascend sparse MLA backend (``ASCEND_SFA``): DeepSeek-V3.2 DSA attention on the latent cache.

vLLM selects a sparse MLA backend for a model whose HF config has ``index_topk``
(``AttentionSelectorConfig.use_sparse``; ``vllm/model_executor/models/deepseek_v2.py``
``DeepseekV2MLAAttention``). Each layer's indexer (``vllm_ascend_attention.sparse_indexer``) writes
the top-k *logical* key positions of every query row into the model's shared
``topk_indices_buffer`` [max_num_batched_tokens, index_topk] int32 (-1 after the valid ones); the
MLA wrapper then calls :meth:`AscendSFAImpl.record_logical_topk_ready` and the attention layer,
whose ``forward_impl`` sends every row to :meth:`AscendSFAImpl.forward_mqa`
(``sfa_metadata``: no prefill split). There ``ascend_ops.sparse_flash_attention``
(``torch_npu.npu_sparse_flash_attention``, ``attention_mode=2`` MLA-absorb, ``sparse_mode=3``)
attends the absorbed query (``q_nope`` already multiplied by W_UK) over the selected latent and
rope rows, found through the block table: the NPU operator takes request-relative positions plus
the block table, where upstream's CUDA sparse backends take physical slots
(``vllm/v1/attention/backends/mla/flashmla_sparse.py``). vLLM up-projects the [T, N, L] result by
W_UV.

The latent cache, its layout and its write are the dense MLA backend's
(:mod:`vllm_ascend_attention.backends.mla`). Graphs: not captured (``sfa_metadata``).
"""

from __future__ import annotations

from typing import ClassVar

import ascend_ops
import torch

from vllm_ascend_attention.backends.mla import AscendMLABackend, AscendMLAImpl
from vllm_ascend_attention.backends.sfa_metadata import AscendSFAMetadata, AscendSFAMetadataBuilder


class AscendSFABackend(AscendMLABackend):
    """Sparse MLA on Ascend: the dense MLA latent cache read through top-k indices."""

    @staticmethod
    def get_name() -> str:
        return "ASCEND_SFA"

    @staticmethod
    def get_impl_cls() -> type[AscendSFAImpl]:
        return AscendSFAImpl

    @staticmethod
    def get_builder_cls() -> type[AscendSFAMetadataBuilder]:
        return AscendSFAMetadataBuilder

    @classmethod
    def is_sparse(cls) -> bool:
        return True


class AscendSFAImpl(AscendMLAImpl):
    """MLA-absorb attention of every row over its indexer-selected positions.

    Extra constructor arguments (``MLAAttention.__init__`` passes them for ``use_sparse``):
    ``topk_indices_buffer`` (int32 [max_num_batched_tokens, index_topk], shared by all layers of
    the model) and ``index_group_builder`` (upstream's physical-index groups; unused: the NPU
    operator reads logical positions).
    """

    is_sparse: ClassVar[bool] = True
    supports_dense_mha_prefill: bool = False
    masked_mha_available: bool = False

    def __init__(self, *args, topk_indices_buffer: torch.Tensor | None = None, index_group_builder=None,
                 **kwargs):
        super().__init__(*args, **kwargs)
        if topk_indices_buffer is None:
            raise ValueError("sparse MLA needs the model's topk_indices_buffer (HF config index_topk)")
        self.topk_indices_buffer = topk_indices_buffer
        self._topk_ready = False

    def record_logical_topk_ready(self) -> None:
        """The MLA wrapper's signal (``vllm/model_executor/layers/mla.py``) that
        ``topk_indices_buffer`` holds this forward's request-relative (logical) positions --
        written by this layer's indexer, or by an earlier layer's when this one skips top-k
        (``index_topk_freq``). Logical positions are what the NPU operator takes, so nothing is
        converted (upstream's ``SparseMLAAttentionImpl`` converts them to physical slots for its
        index groups here). :meth:`forward_mqa` refuses to run for a layer that never got the
        signal (a wrapper that does not follow this protocol). The signal is a Python-side call
        in the wrapper's traced forward: under ``torch.compile`` it runs when the graph is
        traced, not on every step, so it is not consumed per forward."""
        self._topk_ready = True

    def forward_mha(self, *args, **kwargs):
        raise NotImplementedError("Ascend sparse MLA sends every row through forward_mqa (sfa_metadata)")

    def forward_mqa(self, q, kv_c_and_k_pe_cache, attn_metadata: AscendSFAMetadata, layer):
        """q: (q_nope·W_UK [T, N, L], q_pe [T, N, R]) or [T, N, L+R] -> ([T, N, L], None).

        Rows past ``attn_metadata.num_actual_tokens`` (padding) come back as zeros. Raises
        RuntimeError when the top-k indices were never announced (record_logical_topk_ready).
        """
        if not self._topk_ready:
            raise RuntimeError(
                "sparse MLA attention ran before record_logical_topk_ready(): nothing announced "
                "the top-k indices (vllm/model_executor/layers/mla.py calls it after the indexer)")
        if isinstance(q, tuple):
            q_nope, q_pe = q
        else:
            q_nope, q_pe = q.split([self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        md = attn_metadata
        n = md.num_actual_tokens
        rows = q_nope.shape[0]
        nope, rope = self._caches(kv_c_and_k_pe_cache)
        k = self.topk_indices_buffer.shape[-1]
        indices = self.topk_indices_buffer[:n].view(n, 1, k)
        out = ascend_ops.sparse_flash_attention(
            q_nope[:n].contiguous(), q_pe[:n].to(q_nope.dtype).contiguous(), nope, rope, indices,
            md.block_table, md.ends, md.kv_lens, self.scale)
        if n < rows:
            out = torch.cat([out, out.new_zeros(rows - n, *out.shape[1:])])
        return out, None
