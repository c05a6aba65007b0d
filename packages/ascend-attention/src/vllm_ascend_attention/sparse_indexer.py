# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The DeepSeek-V3.2 lightning indexer on Ascend operators (no FP8, no CUDA op).

Upstream (``vllm/model_executor/models/deepseek_v2.py`` ``Indexer`` and
``vllm/model_executor/layers/sparse_attn_indexer.py`` ``SparseAttnIndexer``) quantizes the
indexer query and key to FP8 (a CUDA op or a Triton fallback), keeps the key cache as uint8 x 132
per token in 64-token blocks and has no path for an out-of-tree platform. Here:

* :class:`AscendIndexerCache` -- the indexer key cache: ``index_head_dim`` (128) values per token
  in the model dtype (float32 in emulation, bfloat16/float16 on NPU), our block size, one shared
  head (``MLAAttentionSpec``, cache role ``INDEXER``); laid out ``[num_blocks, block_size, 1,
  128]`` (PA_BSND) for ``torch_npu.npu_lightning_indexer``; its metadata comes from
  :class:`AscendSFAIndexerBackend` (``backends.sfa_metadata``);
* :class:`AscendLightningIndexer` -- the forward: ``wq_b`` on the q-LoRA activations, the fused
  ``wk``/``weights_proj`` projection, LayerNorm on the key, rope on the first ``qk_rope_head_dim``
  dims of query and key through the model's ``indexer_rotary_emb`` (vLLM builds it with
  ``is_neox_style = not config.indexer_rope_interleave``: NeoX for DeepSeek-V3.2, interleaved for
  GLM-MoE-DSA, keyed on the model config), the key written with ``ascend_ops.reshape_and_cache``
  and ``ascend_ops.lightning_indexer`` (``torch_npu.npu_lightning_indexer``,
  ``sparse_count = index_topk``) writing the top-k logical positions into the model's
  ``topk_indices_buffer``.

Scores follow the reference indexer (transformers ``models/deepseek_v32``, which like this module
skips the Hadamard rotation -- orthogonal, dot products unchanged -- and the FP8 rounding):
``sum_h w[t, h] * n_heads**-0.5 * relu(softmax_scale * q[t, h] . k[j])`` with
``softmax_scale = index_head_dim**-0.5``; both positive factors are folded into the weights.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from vllm.model_executor.models.deepseek_v2 import DeepseekV32IndexerCache
from vllm.v1.attention.backend import MultipleOf
from vllm.v1.attention.backends.mla.indexer import DeepseekV32IndexerBackend
from vllm.v1.kv_cache_interface import MLAAttentionSpec, SparseCacheRole

from vllm_ascend_attention import sparse_indexer_op  # noqa: F401  (registers torch.ops.vllm.ascend_sparse_indexer)
from vllm_ascend_attention.backends.sfa_metadata import AscendSFAMetadataBuilder


class AscendSFAIndexerBackend(DeepseekV32IndexerBackend):
    """Metadata of the indexer key caches (no impl: :class:`AscendLightningIndexer` runs it)."""

    @staticmethod
    def get_name() -> str:
        return "ASCEND_SFA_INDEXER"

    @staticmethod
    def get_supported_kernel_block_sizes(kv_cache_spec=None) -> list[int | MultipleOf]:
        """Multiples of 16 (``npu_lightning_indexer``: block_size % 16 == 0, at most 1024)."""
        return [MultipleOf(16)]

    @classmethod
    def get_supported_head_sizes(cls) -> list[int]:
        return [128]

    @staticmethod
    def get_builder_cls() -> type[AscendSFAMetadataBuilder]:
        return AscendSFAMetadataBuilder


class AscendIndexerCache(DeepseekV32IndexerCache):
    """The indexer key cache of one layer: ``head_dim`` values per token in ``dtype``.

    ``kv_cache`` (after binding) is ``[num_blocks, block_size, 1, head_dim]``, a view of the
    allocation vLLM made for :meth:`get_kv_cache_spec`.
    """

    def bind_kv_cache(self, kv_cache: torch.Tensor) -> None:
        cache = kv_cache.squeeze(1) if kv_cache.dim() == 4 else kv_cache
        self.kv_cache = cache.view(cache.shape[0], cache.shape[1], 1, self.head_dim)

    def get_kv_cache_spec(self, vllm_config) -> MLAAttentionSpec:
        return MLAAttentionSpec(block_size=self.cache_config.block_size, num_kv_heads=1, max_tp_shards=1,
                                head_size=self.head_dim, dtype=self.dtype,
                                cache_role=SparseCacheRole.INDEXER)

    def get_attn_backend(self) -> type[AscendSFAIndexerBackend]:
        return AscendSFAIndexerBackend


class AscendLightningIndexer(nn.Module):
    """Takes over an upstream ``Indexer``'s weights (the same parameter objects, so checkpoint
    names stay ``...self_attn.indexer.*``) and replaces its key cache in vLLM's static forward
    context with an :class:`AscendIndexerCache` of the same name.

    ``forward(hidden_states [T, hidden], qr [T, q_lora_rank], positions [T], rotary_emb)`` writes
    ``topk_indices_buffer[:num_actual_tokens]`` (int32 logical positions, -1 padded) and returns
    the buffer, as upstream's ``Indexer.forward`` does. The projections and rope are traced by
    ``torch.compile``; the step-dependent part (cache write, ``lightning_indexer``) is the opaque
    op ``torch.ops.vllm.ascend_sparse_indexer`` (``sparse_indexer_op``).
    """

    def __init__(self, upstream: Any, dtype: torch.dtype, vllm_config) -> None:
        super().__init__()
        self.wq_b = upstream.wq_b
        self.wk_weights_proj = upstream.wk_weights_proj
        self.k_norm = upstream.k_norm
        self.topk_tokens = int(upstream.topk_tokens)
        self.n_head = int(upstream.n_head)
        self.head_dim = int(upstream.head_dim)
        self.rope_dim = int(upstream.rope_dim)
        self.softmax_scale = float(upstream.softmax_scale)
        self.topk_indices_buffer = upstream.topk_indices_buffer
        old = upstream.k_cache
        context = vllm_config.compilation_config.static_forward_context
        context.pop(old.prefix, None)
        self.k_cache = AscendIndexerCache(self.head_dim, dtype, old.prefix, old.cache_config)
        # keep the upstream module consistent: it stays registered under the attention module
        upstream.k_cache = self.k_cache
        if getattr(upstream, "indexer_op", None) is not None:
            upstream.indexer_op.k_cache = self.k_cache

    def forward(self, hidden_states: torch.Tensor, qr: torch.Tensor, positions: torch.Tensor,
                rotary_emb) -> torch.Tensor:
        h, d, r = self.n_head, self.head_dim, self.rope_dim
        q = self.wq_b(qr)[0].view(-1, h, d)
        kw = self.wk_weights_proj(hidden_states)[0]
        k = self.k_norm(kw[:, :d])
        weights = kw[:, d:]
        q_pe, q_nope = q.split([r, d - r], dim=-1)
        k_pe, k_nope = k.split([r, d - r], dim=-1)
        q_pe, k_pe = rotary_emb(positions, q_pe.contiguous(), k_pe.unsqueeze(1).contiguous())
        q = torch.cat([q_pe.reshape(-1, h, r), q_nope], dim=-1)
        k = torch.cat([k_pe.reshape(-1, r), k_nope], dim=-1)

        w = weights.float() * (self.softmax_scale * h**-0.5)
        torch.ops.vllm.ascend_sparse_indexer(q, k, w, self.topk_indices_buffer, self.k_cache.prefix,
                                             self.topk_tokens)
        return self.topk_indices_buffer
