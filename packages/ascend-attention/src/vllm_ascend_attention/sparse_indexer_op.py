# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``torch.ops.vllm.ascend_sparse_indexer``: the step-dependent part of the DSA indexer as one
opaque custom op (the role of upstream's ``torch.ops.vllm.sparse_attn_indexer``,
``vllm/model_executor/layers/sparse_attn_indexer.py``).

Everything that reads the step's metadata -- the number of real rows, the slot mapping, the
block table, the lengths -- must run inside an op that ``torch.compile`` does not trace: vLLM
compiles the model once over a symbolic token count and drops Dynamo's guards, so a value read
from the forward context while tracing would be frozen into the compiled graph. The op writes
this step's keys into the layer's indexer cache, runs ``ascend_ops.lightning_indexer`` and
copies the top-k logical positions into ``topk_indices_buffer`` (mutated in place).

No ``from __future__ import annotations`` here: the op's schema is inferred from the
annotations.
"""

import ascend_ops
import torch
from vllm.forward_context import get_forward_context
from vllm.utils.torch_utils import direct_register_custom_op


def _metadata(attn_metadata, name: str):
    if isinstance(attn_metadata, list):  # speculative decoding: [0] is the target model's
        attn_metadata = attn_metadata[0] if attn_metadata else None
    if not isinstance(attn_metadata, dict):
        return None
    return attn_metadata.get(name)


def ascend_sparse_indexer(q: torch.Tensor, k: torch.Tensor, weights: torch.Tensor,
                          topk_indices_buffer: torch.Tensor, k_cache_prefix: str, topk_tokens: int) -> None:
    """q [T, H, D] (rope applied), k [T, D] (rope applied), weights [T, H] float32 (scales folded
    in); writes ``topk_indices_buffer[:num_actual_tokens, :topk_tokens]`` (int32 logical
    positions, -1 padded). A step without metadata for ``k_cache_prefix`` (profile and dummy
    runs) writes nothing."""
    context = get_forward_context()
    md = _metadata(context.attn_metadata, k_cache_prefix)
    if md is None:
        return
    cache = context.no_compile_layers[k_cache_prefix].kv_cache
    n = md.num_actual_tokens
    rows = k[:n].to(cache.dtype).unsqueeze(1).contiguous()
    # one-head key cache: key and value slots are the same tensor, written with the same rows
    ascend_ops.reshape_and_cache(rows, rows, cache, cache, md.slot_mapping[:n])
    indices = ascend_ops.lightning_indexer(q[:n].to(cache.dtype).contiguous(), cache, weights[:n].contiguous(),
                                           md.block_table, md.ends, md.kv_lens, topk_tokens)
    topk_indices_buffer[:n, :topk_tokens].copy_(indices.view(n, topk_tokens))


def _fake(q: torch.Tensor, k: torch.Tensor, weights: torch.Tensor, topk_indices_buffer: torch.Tensor,
          k_cache_prefix: str, topk_tokens: int) -> None:
    return None


direct_register_custom_op(op_name="ascend_sparse_indexer", op_func=ascend_sparse_indexer,
                          mutates_args=["topk_indices_buffer"], fake_impl=_fake)
