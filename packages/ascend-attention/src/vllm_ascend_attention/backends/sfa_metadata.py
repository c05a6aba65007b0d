# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Step metadata of the sparse-attention (DeepSeek-V3.2 DSA) layers: one builder serves both the
MLA layers (``AscendSFABackend``) and the indexer key caches (``AscendSFAIndexerBackend``).

The DSA operators (``ascend_ops.lightning_indexer`` and ``ascend_ops.sparse_flash_attention``)
take every token of a step in one TND call -- decode, prefill and chunked-prefill rows alike,
causal and bottom-right aligned -- so the metadata does not split the batch: it reports every
request as a decode (``num_decode_tokens == num_actual_tokens``, ``prefill = None``), which makes
vLLM's ``MLAAttention.forward_impl`` (``vllm/model_executor/layers/attention/mla_attention.py``)
send all rows to the impl's ``forward_mqa`` (its ``_use_sparse_mha`` is false without a prefill).

Lengths stay device tensors (``ends`` = cumulative query ends, ``kv_lens`` = per-request key
lengths incl. this step's tokens, both int32, views of vLLM's ``query_start_loc`` / ``seq_lens``):
the NPU branch hands them to the operators unread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from vllm.v1.attention.backend import (
    AttentionCGSupport,
    AttentionMetadataBuilder,
    CommonAttentionMetadata,
)


@dataclass
class AscendSFAMetadata:
    """One step of a DSA layer.

    Attributes:
        num_actual_tokens: rows of the step that belong to requests (rows past it are padding).
        num_reqs: requests of the step.
        ends: int32 [num_reqs] cumulative query ends (``query_start_loc[1:]``), device.
        kv_lens: int32 [num_reqs] key lengths including this step's tokens, device.
        block_table: int32 [>= num_reqs, max_blocks] block ids (the layer's KV-cache group), device.
        slot_mapping: int [num_tokens] cache slot of each row (< 0: padding), device.
        num_decodes / num_decode_tokens / num_prefills / prefill / decode: vLLM's MLA split,
            fixed to "all rows are MQA rows" (module docstring).
    """

    num_actual_tokens: int
    num_reqs: int
    ends: torch.Tensor
    kv_lens: torch.Tensor
    block_table: torch.Tensor
    slot_mapping: torch.Tensor
    max_query_len: int
    max_seq_len: int
    num_decodes: int
    num_decode_tokens: int
    num_prefills: int = 0
    prefill: None = None
    decode: None = None


class AscendSFAMetadataBuilder(AttentionMetadataBuilder[AscendSFAMetadata]):
    """Builds :class:`AscendSFAMetadata` from vLLM's ``CommonAttentionMetadata``; no host sync.

    Graphs: ``NEVER``. The indexer runs in the MLA wrapper's forward, outside the attention
    custom op, and keeps its step state (top-k indices) in a model-wide buffer; capturing it
    needs the per-replay length updates the MLA decode has (``graph_params``), not built for
    DSA yet, so vLLM runs this backend's layers eagerly.
    """

    _cudagraph_support: ClassVar[AttentionCGSupport] = AttentionCGSupport.NEVER
    reorder_batch_threshold: int | None = None

    def __init__(self, kv_cache_spec, layer_names, vllm_config, device):
        super().__init__(kv_cache_spec, layer_names, vllm_config, device)

    def build(self, common_prefix_len: int, common_attn_metadata: CommonAttentionMetadata,
              fast_build: bool = False) -> AscendSFAMetadata:
        cm = common_attn_metadata
        b = cm.num_reqs
        return AscendSFAMetadata(
            num_actual_tokens=cm.num_actual_tokens,
            num_reqs=b,
            ends=_int32(cm.query_start_loc[1 : b + 1]),
            kv_lens=_int32(cm.seq_lens[:b]),
            block_table=_int32(cm.block_table_tensor[:b]),
            slot_mapping=cm.slot_mapping,
            max_query_len=cm.max_query_len,
            max_seq_len=cm.max_seq_len,
            num_decodes=b,
            num_decode_tokens=cm.num_actual_tokens,
        )

    def build_for_cudagraph_capture(self, common_attn_metadata: CommonAttentionMetadata) -> AscendSFAMetadata:
        return self.build(0, common_attn_metadata)


def _int32(t: torch.Tensor) -> torch.Tensor:
    return t if t.dtype == torch.int32 else t.to(torch.int32)
