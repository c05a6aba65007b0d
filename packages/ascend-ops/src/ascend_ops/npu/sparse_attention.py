# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""NPU branch of the sparse-attention ops (DeepSeek-V3.2 DSA), mapped onto torch_npu's
``npu_lightning_indexer`` and ``npu_sparse_flash_attention`` as vllm-ascend calls them on A2/A3
(``vllm_ascend/device/device_op.py``@182b75e, ``indexer_select_post_process`` and
``execute_sparse_flash_attention_process``): TND query, PA_BSND paged cache with one KV head,
int32 ``actual_seq_lengths_query`` (cumulative query ends) and ``actual_seq_lengths_key`` /
``_kv`` (per-request key lengths), ``block_table`` with one row per request, sparse_mode 3
(causal) or 0, ``sparse_block_size=1``, ``attention_mode=2`` (MLA-absorb: the latent cache is
both key and value, the rope cache ``key_rope``).

Argument names follow the torch-npu 2.13.0 wheel's published schemas. torch_npu is found at
call time (``ascend_ops.npu.layers.torch_npu``), so the simulated torch_npu runs this branch on
a CPU. Nothing here reads a device tensor: the lengths go to the operator as device tensors.

Head count: ``npu_sparse_flash_attention`` takes N in {1, 2, 4, ..., 128} on Atlas A2/A3
(op-plugin ``docs/zh/custom_APIs/torch_npu/torch_npu-npu_sparse_flash_attention.md``@517f2e7);
another N is zero-padded to the next power of two for the call and the padded heads dropped, as
the MLA decode does (``ascend_ops.npu.mla``). The indexer's N <= 64 is the operator's to refuse.
"""

from __future__ import annotations

import torch

from ascend_ops.npu.layers import torch_npu
from ascend_ops.npu.mla import _pad_heads, padded_heads


def _i32(t: torch.Tensor) -> torch.Tensor:
    """``t`` as a contiguous int32 tensor (a device cast when it is int64)."""
    return (t if t.dtype == torch.int32 else t.to(torch.int32)).contiguous()


def _cache(cache: torch.Tensor, name: str, op: str) -> torch.Tensor:
    """The PA_BSND cache itself: the A2/A3 operators read key caches only contiguous (op-plugin
    docs of both operators, 约束说明), and a copy would move the whole cache every call."""
    if not cache.is_contiguous():
        raise ValueError(f"{name} must be contiguous for torch_npu.{op} on Atlas A2/A3 (got strides "
                         f"{tuple(cache.stride())}); a copy would move the whole cache every call")
    return cache


def _lengths(block_table, lens_q, lens_kv):
    b = lens_q.shape[0]
    return _i32(block_table[:b]), _i32(lens_q), _i32(lens_kv)


def lightning_indexer(query, key_cache, weights, block_table, actual_seq_lengths_query,
                      actual_seq_lengths_key, sparse_count, causal):
    """``torch_npu.npu_lightning_indexer`` -> its ``sparse_indices`` [T, 1, sparse_count] int32
    (the second output, ``sparse_values``, is empty without ``return_value``)."""
    table, lens_q, lens_k = _lengths(block_table, actual_seq_lengths_query, actual_seq_lengths_key)
    indices, _values = torch_npu().npu_lightning_indexer(
        query.contiguous(), _cache(key_cache, "key_cache", "npu_lightning_indexer"),
        weights.contiguous(),
        actual_seq_lengths_query=lens_q, actual_seq_lengths_key=lens_k, block_table=table,
        layout_query="TND", layout_key="PA_BSND", sparse_count=sparse_count,
        sparse_mode=3 if causal else 0)
    return indices


def sparse_flash_attention(q_nope, q_pe, kv_c_cache, k_pe_cache, sparse_indices, block_table,
                           actual_seq_lengths_query, actual_seq_lengths_kv, scale, causal):
    """``torch_npu.npu_sparse_flash_attention`` in MLA-absorb mode -> ``attention_out``
    [T, N, L] (``softmax_max`` / ``softmax_sum`` stay empty: ``return_softmax_lse`` is not
    supported with a PA_BSND cache, op-plugin doc)."""
    n = q_nope.shape[1]
    heads = padded_heads(n)
    table, lens_q, lens_kv = _lengths(block_table, actual_seq_lengths_query, actual_seq_lengths_kv)
    latent = _cache(kv_c_cache, "kv_c_cache", "npu_sparse_flash_attention")
    out, _max, _sum = torch_npu().npu_sparse_flash_attention(
        _pad_heads(q_nope, heads), latent, latent, _i32(sparse_indices), scale,
        block_table=table, actual_seq_lengths_query=lens_q, actual_seq_lengths_kv=lens_kv,
        query_rope=_pad_heads(q_pe, heads),
        key_rope=_cache(k_pe_cache, "k_pe_cache", "npu_sparse_flash_attention"),
        sparse_block_size=1, layout_query="TND", layout_kv="PA_BSND",
        sparse_mode=3 if causal else 0, attention_mode=2)
    return out if heads == n else out[:, :n].contiguous()
