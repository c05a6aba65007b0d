# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Sparse-attention ops of DeepSeek-V3.2 (DSA): ``torch.ops.ascend.lightning_indexer`` (the
top-k key selection) and ``torch.ops.ascend.sparse_flash_attention`` (MLA-absorb attention
over the selected positions), both over paged caches with TND queries.

Lengths are int tensors as the NPU operators take them (``actual_seq_lengths_query`` =
cumulative query ends, ``actual_seq_lengths_key`` / ``actual_seq_lengths_kv`` = per-request key
lengths including this step's tokens): the NPU branch passes them to the device unread, so a
call can be captured in a graph; the CPU branches read them. Semantics and sources:
``ascend_ops/reference/sparse_attention.py``; the NPU mapping: ``ascend_ops/npu/sparse_attention.py``.
"""

from __future__ import annotations

import torch

from ascend_ops._dispatch import eager_direct
from ascend_ops.checks import sparse_attention as _checks
from ascend_ops.families import FAMILIES

_SPARSE = FAMILIES["sparse_attention"]


def _indexer_impl(query: torch.Tensor, key_cache: torch.Tensor, weights: torch.Tensor,
                  block_table: torch.Tensor, actual_seq_lengths_query: torch.Tensor,
                  actual_seq_lengths_key: torch.Tensor, sparse_count: int,
                  causal: bool = True) -> torch.Tensor:
    _checks.shapes_indexer(query, key_cache, weights, block_table, actual_seq_lengths_query,
                           actual_seq_lengths_key, sparse_count)
    return _SPARSE.pick("lightning_indexer", query).lightning_indexer(
        query, key_cache, weights, block_table, actual_seq_lengths_query, actual_seq_lengths_key,
        sparse_count, causal)


_indexer_op = torch.library.custom_op("ascend::lightning_indexer", mutates_args=())(_indexer_impl)


@_indexer_op.register_fake
def _(query, key_cache, weights, block_table, actual_seq_lengths_query, actual_seq_lengths_key,
      sparse_count, causal=True):
    _checks.shapes_indexer(query, key_cache, weights, block_table, actual_seq_lengths_query,
                           actual_seq_lengths_key, sparse_count)
    return query.new_empty(query.shape[0], 1, sparse_count, dtype=torch.int32)


def lightning_indexer(query: torch.Tensor, key_cache: torch.Tensor, weights: torch.Tensor,
                      block_table: torch.Tensor, actual_seq_lengths_query: torch.Tensor,
                      actual_seq_lengths_key: torch.Tensor, sparse_count: int,
                      causal: bool = True) -> torch.Tensor:
    """The top-``sparse_count`` key positions of every query token (DeepSeek-V3.2 indexer).

    Request b owns query rows ``actual_seq_lengths_query[b-1]:actual_seq_lengths_query[b]``,
    the last q_len of its ``actual_seq_lengths_key[b]`` positions; with ``causal`` query i sees
    positions j <= kv_len - q_len + i (prefill, chunked prefill and decode in one call), without
    it all kv_len. Position j scores ``sum_h weights[t, h] * relu(query[t, h] . key[j])``.

    Shapes/dtypes: ``query`` TND [T, N, D] float (NPU: float16/bfloat16, D = 128, N <= 64);
    ``key_cache`` [num_blocks, block_size, 1, D] of query's dtype (the indexer's paged key cache;
    NPU: contiguous, block_size a multiple of 16 up to 1024); ``weights`` [T, N] of query's dtype
    or float32 (the per-head weights, any softmax scale already folded in); ``block_table`` int
    [>= B, max_blocks]; ``actual_seq_lengths_query`` / ``actual_seq_lengths_key`` int [B] on
    query's device; ``sparse_count`` the top-k (NPU: 1..2048, or 3072..8192 in steps of 1024).
    Rows past the last query end are padding (graph-padded batches) and come back all -1.

    Returns int32 [T, 1, sparse_count]: row t holds logical positions within its request (map
    them through the block table; upstream vLLM's CUDA backends take physical slots instead),
    best score first (ties: lower position first here; the NPU kernel's tie order is its own),
    min(sparse_count, visible) of them, then -1. The [T, 1, K] shape is what
    :func:`sparse_flash_attention` takes.
    NPU: ``torch_npu.npu_lightning_indexer(..., layout_query="TND", layout_key="PA_BSND",
    sparse_mode=3 or 0)``. CPU: the vectorised reference (float32; no C++ kernel).
    Raises TypeError/ValueError naming the argument for bad dtypes, shapes, lengths (CPU:
    values too) or block ids outside the cache (CPU).
    """
    args = (query, key_cache, weights, block_table, actual_seq_lengths_query, actual_seq_lengths_key,
            sparse_count, bool(causal))
    if eager_direct(*args[:6]):
        return _indexer_impl(*args)
    return torch.ops.ascend.lightning_indexer(*args)


def _sfa_impl(q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c_cache: torch.Tensor,
              k_pe_cache: torch.Tensor, sparse_indices: torch.Tensor, block_table: torch.Tensor,
              actual_seq_lengths_query: torch.Tensor, actual_seq_lengths_kv: torch.Tensor,
              scale: float, causal: bool = True) -> torch.Tensor:
    _checks.shapes_sparse_attention(q_nope, q_pe, kv_c_cache, k_pe_cache, sparse_indices, block_table,
                                    actual_seq_lengths_query, actual_seq_lengths_kv)
    return _SPARSE.pick("sparse_flash_attention", q_nope).sparse_flash_attention(
        q_nope, q_pe, kv_c_cache, k_pe_cache, sparse_indices, block_table, actual_seq_lengths_query,
        actual_seq_lengths_kv, scale, causal)


_sfa_op = torch.library.custom_op("ascend::sparse_flash_attention", mutates_args=())(_sfa_impl)


@_sfa_op.register_fake
def _(q_nope, q_pe, kv_c_cache, k_pe_cache, sparse_indices, block_table, actual_seq_lengths_query,
      actual_seq_lengths_kv, scale, causal=True):
    _checks.shapes_sparse_attention(q_nope, q_pe, kv_c_cache, k_pe_cache, sparse_indices, block_table,
                                    actual_seq_lengths_query, actual_seq_lengths_kv)
    return torch.empty_like(q_nope)


def sparse_flash_attention(q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c_cache: torch.Tensor,
                           k_pe_cache: torch.Tensor, sparse_indices: torch.Tensor,
                           block_table: torch.Tensor, actual_seq_lengths_query: torch.Tensor,
                           actual_seq_lengths_kv: torch.Tensor, scale: float,
                           causal: bool = True) -> torch.Tensor:
    """MLA-absorb attention of each query token over its selected positions (DeepSeek-V3.2).

    Token t (request b as for :func:`lightning_indexer`), head n, scores each selected logical
    position j by ``scale * (q_nope[t, n] . kv_c[j] + q_pe[t, n] . k_pe[j])``, the cache rows
    found through ``block_table``, and returns the softmax-weighted sum of the ``kv_c`` rows.
    Selected: the entries of ``sparse_indices[t, 0]`` before its first -1, among its first
    min(K, visible) entries, with 0 <= j < visible (visible = kv_len - q_len + i + 1 with
    ``causal``, else kv_len): what the NPU kernel reads (vllm-ascend
    ``csrc/attention/sparse_flash_attention/op_kernel/arch22/sparse_flash_attention_kernel_mla.h``,
    ``CalcSinnerTopKBegin``). :func:`lightning_indexer`'s output is always read whole. A token
    with nothing selected, and a padding row past the last query end, gets zeros.

    Shapes/dtypes: ``q_nope`` [T, N, L] (absorbed: already multiplied by W_UK), ``q_pe``
    [T, N, R]; ``kv_c_cache`` [num_blocks, block_size, 1, L] and ``k_pe_cache`` [..., 1, R] of
    q_nope's dtype with one block layout; ``sparse_indices`` int [T, 1, K] (int32 on NPU);
    ``block_table`` int [>= B, max_blocks]; lengths int [B] on q_nope's device. NPU:
    float16/bfloat16, L = 512, R = 64, contiguous caches, block_size a multiple of 16 up to 1024;
    N must be a power of two up to 128 for the operator, so another N <= 128 is zero-padded for
    the call and the padded heads dropped. Returns [T, N, L] in q_nope's dtype (float32 math on
    CPU); the operator's softmax_max / softmax_sum are not returned (``return_softmax_lse`` is
    not supported with a paged cache, op-plugin doc).
    NPU: ``torch_npu.npu_sparse_flash_attention(q_nope, kv_c_cache, kv_c_cache, sparse_indices,
    scale, query_rope=q_pe, key_rope=k_pe_cache, layout_query="TND", layout_kv="PA_BSND",
    sparse_block_size=1, attention_mode=2, sparse_mode=3 or 0, ...)``. CPU: the vectorised
    reference (no C++ kernel).
    Raises TypeError/ValueError naming the argument for bad dtypes, shapes, lengths (CPU: values
    too, and index entries below -1) or block ids outside the cache (CPU).
    """
    args = (q_nope, q_pe, kv_c_cache, k_pe_cache, sparse_indices, block_table,
            actual_seq_lengths_query, actual_seq_lengths_kv, float(scale), bool(causal))
    if eager_direct(*args[:8]):
        return _sfa_impl(*args)
    return torch.ops.ascend.sparse_flash_attention(*args)
