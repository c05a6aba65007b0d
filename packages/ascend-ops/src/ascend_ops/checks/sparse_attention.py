# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Argument validation of the sparse-attention ops (DeepSeek-V3.2 DSA: ``lightning_indexer``,
``sparse_flash_attention``).

``shapes_*`` check what the op layer can see without reading a device tensor (dtypes, ranks,
shapes, devices): they run on every backend and inside graph captures. ``lengths_values`` and
``indices_values`` read the length / index tensors and run in the CPU branches only (on the NPU
the operator reads them on the device; the simulator's rules check them there).
"""

from __future__ import annotations

import torch

from ascend_ops.checks.tensors import float_tensor, index_tensor, same_device, same_dtype


def _lengths(query_name: str, query: torch.Tensor, block_table, lens_q, lens_kv, kv_name: str) -> None:
    index_tensor("block_table", block_table, 2)
    index_tensor("actual_seq_lengths_query", lens_q, 1)
    index_tensor(kv_name, lens_kv, 1)
    if lens_q.shape[0] != lens_kv.shape[0]:
        raise ValueError(
            f"actual_seq_lengths_query ({lens_q.shape[0]}) and {kv_name} ({lens_kv.shape[0]}) must "
            "have one entry per request")
    if block_table.shape[0] < lens_q.shape[0]:
        raise ValueError(f"block_table has {block_table.shape[0]} rows for {lens_q.shape[0]} requests")
    for name, t in (("block_table", block_table), ("actual_seq_lengths_query", lens_q), (kv_name, lens_kv)):
        same_device(name, t, query_name, query)


def _paged_cache(name: str, cache, width: int, width_of: str, ref: torch.Tensor) -> None:
    float_tensor(name, cache, 4)
    same_dtype(name, cache, width_of, ref)
    if cache.shape[2] != 1:
        raise ValueError(f"{name} must be [num_blocks, block_size, 1, {width}] (one shared KV head), "
                         f"got {tuple(cache.shape)}")
    if cache.shape[3] != width:
        raise ValueError(f"{name} width {cache.shape[3]} must equal {width_of}'s head dim {width}")
    same_device(name, cache, width_of, ref)


def shapes_indexer(query, key_cache, weights, block_table, lens_q, lens_k, sparse_count) -> None:
    """``lightning_indexer``: query [T, N, D]; key_cache [num_blocks, block_size, 1, D] of query's
    dtype; weights [T, N] of query's dtype or float32; block_table [>= B, max_blocks] int;
    lengths int [B]; ``sparse_count`` >= 1."""
    float_tensor("query", query, 3)
    _paged_cache("key_cache", key_cache, query.shape[2], "query", query)
    float_tensor("weights", weights, 2)
    if weights.dtype not in (query.dtype, torch.float32):
        raise TypeError(f"weights dtype {weights.dtype} must be query's ({query.dtype}) or float32")
    if tuple(weights.shape) != tuple(query.shape[:2]):
        raise ValueError(f"weights {tuple(weights.shape)} must be [T, N] with query's T, N "
                         f"{tuple(query.shape[:2])}")
    same_device("weights", weights, "query", query)
    _lengths("query", query, block_table, lens_q, lens_k, "actual_seq_lengths_key")
    if isinstance(sparse_count, bool) or not isinstance(sparse_count, int) or sparse_count < 1:
        raise ValueError(f"sparse_count must be an int >= 1, got {sparse_count!r}")


def shapes_sparse_attention(q_nope, q_pe, kv_c_cache, k_pe_cache, sparse_indices, block_table,
                            lens_q, lens_kv) -> None:
    """``sparse_flash_attention``: q_nope [T, N, L], q_pe [T, N, R] of one dtype; caches
    [num_blocks, block_size, 1, L] / [..., R] of that dtype with one [num_blocks, block_size];
    sparse_indices int [T, 1, K] with K >= 1; block_table and lengths as for the indexer."""
    float_tensor("q_nope", q_nope, 3)
    float_tensor("q_pe", q_pe, 3)
    same_dtype("q_pe", q_pe, "q_nope", q_nope)
    if q_pe.shape[:2] != q_nope.shape[:2]:
        raise ValueError(f"q_pe {tuple(q_pe.shape)} must be [T, N, R] with q_nope's T, N "
                         f"{tuple(q_nope.shape[:2])}")
    same_device("q_pe", q_pe, "q_nope", q_nope)
    _paged_cache("kv_c_cache", kv_c_cache, q_nope.shape[2], "q_nope", q_nope)
    _paged_cache("k_pe_cache", k_pe_cache, q_pe.shape[2], "q_pe", q_pe)
    if kv_c_cache.shape[:2] != k_pe_cache.shape[:2]:
        raise ValueError(f"kv_c_cache {tuple(kv_c_cache.shape)} and k_pe_cache {tuple(k_pe_cache.shape)} "
                         "must have the same [num_blocks, block_size]")
    index_tensor("sparse_indices", sparse_indices, 3)
    if sparse_indices.shape[0] != q_nope.shape[0] or sparse_indices.shape[1] != 1 or sparse_indices.shape[2] < 1:
        raise ValueError(f"sparse_indices {tuple(sparse_indices.shape)} must be [T, 1, K] with q_nope's "
                         f"T = {q_nope.shape[0]} and K >= 1")
    same_device("sparse_indices", sparse_indices, "q_nope", q_nope)
    _lengths("q_nope", q_nope, block_table, lens_q, lens_kv, "actual_seq_lengths_kv")


def lengths_values(total: int, cache: torch.Tensor, block_table, lens_q, lens_kv,
                   kv_name: str) -> tuple[list[int], list[int]]:
    """Read and check the lengths (CPU branches): cumulative query ends, non-decreasing, at
    most ``total`` (rows past the last end are padding); each request's key length >= its
    query length; the block table covers every key and names blocks of ``cache``. Returns
    (ends, kv_lens) as host lists."""
    ends = [int(v) for v in lens_q.tolist()]
    kv_lens = [int(v) for v in lens_kv.tolist()]
    prev = 0
    bs, nb, cols = cache.shape[1], cache.shape[0], block_table.shape[1]
    for i, (end, kv) in enumerate(zip(ends, kv_lens, strict=True)):
        q_len = end - prev
        if q_len < 0:
            raise ValueError("actual_seq_lengths_query must be non-negative, non-decreasing cumulative "
                             f"query ends, got {ends}")
        if kv < q_len:
            raise ValueError(f"{kv_name}[{i}]={kv} must be >= its query length {q_len} (the queries are "
                             "the last tokens of the request)")
        need = -(-kv // bs)
        if need > cols:
            raise ValueError(f"{kv_name}[{i}]={kv} needs {need} blocks but block_table has {cols} columns")
        if need:
            row = block_table[i, :need]
            if int(row.min()) < 0 or int(row.max()) >= nb:
                raise ValueError(f"block_table[{i}] references a block outside [0, {nb}) (the cache's "
                                 "num_blocks)")
        prev = end
    if ends and ends[-1] > total:
        raise ValueError(f"actual_seq_lengths_query ends at {ends[-1]}, past the {total} query rows")
    return ends, kv_lens


def indices_values(sparse_indices: torch.Tensor) -> None:
    """Entries of ``sparse_indices`` are positions (>= 0) or -1 (CPU branches)."""
    if sparse_indices.numel() and int(sparse_indices.min()) < -1:
        raise ValueError("sparse_indices entries must be positions >= 0 or -1 (padding), got "
                         f"{int(sparse_indices.min())}")
