# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Argument validation of the paged-attention op (FIA): layouts, shapes against the paged KV
cache and block table, and the lengths (``query_start_loc`` / ``seq_lens`` tensors, or the host
``actual_seq_lengths`` / ``actual_seq_lengths_kv`` lists)."""

from __future__ import annotations

from ascend_ops.checks.kv_cache import cache_matches, cache_tensor
from ascend_ops.checks.tensors import float_tensor, index_tensor, same_dtype, same_shape

LAYOUTS = ("TND", "BSND")


def attention(query, key_cache, value_cache, block_table, query_start_loc, seq_lens, layout) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    float_tensor("query", query, 3 if layout == "TND" else 4)
    cache_tensor("key_cache", key_cache, 4)
    cache_tensor("value_cache", value_cache, 4)
    same_shape("value_cache", value_cache, "key_cache", key_cache)
    same_dtype("value_cache", value_cache, "key_cache", key_cache)
    cache_matches("key_cache", key_cache, "query", query)
    index_tensor("block_table", block_table, 2)
    index_tensor("query_start_loc", query_start_loc, 1)
    index_tensor("seq_lens", seq_lens, 1)
    hq, d = query.shape[-2], query.shape[-1]
    hk = key_cache.shape[2]
    if key_cache.shape[3] != d:
        raise ValueError(f"key_cache head dim {key_cache.shape[3]} must equal query head dim {d}")
    if hk == 0 or hq % hk:
        raise ValueError(f"query heads ({hq}) must be a multiple of key_cache heads ({hk})")
    b = seq_lens.shape[0]
    if query_start_loc.shape[0] != b + 1:
        raise ValueError(
            f"query_start_loc length {query_start_loc.shape[0]} must be len(seq_lens) + 1 = {b + 1}"
        )
    if block_table.shape[0] < b:
        raise ValueError(f"block_table has {block_table.shape[0]} rows, need one per request ({b})")
    if layout == "BSND" and query.shape[0] != b:
        raise ValueError(f"BSND query batch {query.shape[0]} must equal len(seq_lens) = {b}")


def attention_values(query, key_cache, block_table, query_start_loc, seq_lens, layout) -> None:
    qsl = query_start_loc.tolist()
    lens = seq_lens.tolist()
    total = query.shape[0] if layout == "TND" else None
    if qsl and qsl[0] != 0:
        raise ValueError(f"query_start_loc must start at 0, got {qsl[0]}")
    if total is not None and qsl and qsl[-1] != total:
        raise ValueError(f"query_start_loc must end at the token count {total}, got {qsl[-1]}")
    bs, nb = key_cache.shape[1], key_cache.shape[0]
    for i, kv in enumerate(lens):
        q_len = qsl[i + 1] - qsl[i]
        if q_len < 0:
            raise ValueError("query_start_loc must be non-decreasing")
        if layout == "BSND" and q_len > query.shape[1]:
            raise ValueError(f"query_start_loc gives request {i} {q_len} tokens > BSND S {query.shape[1]}")
        if kv < q_len:
            raise ValueError(f"seq_lens[{i}]={kv} must be >= its query length {q_len}")
        need = -(-kv // bs)
        if need > block_table.shape[1]:
            raise ValueError(
                f"seq_lens[{i}]={kv} needs {need} blocks but block_table has {block_table.shape[1]} columns"
            )
        if need:
            row = block_table[i, :need]
            if int(row.min()) < 0 or int(row.max()) >= nb:
                raise ValueError(
                    f"block_table[{i}] references block outside [0, {nb}) (key_cache num_blocks)"
                )


def attention_lengths(query, key_cache, block_table, num_requests, ends, kv_lens) -> None:
    """Check host lengths (``actual_seq_lengths`` / ``actual_seq_lengths_kv``) without
    reading any device tensor: safe inside a graph capture."""
    ends, kv_lens = list(ends), list(kv_lens)
    if len(ends) != num_requests or len(kv_lens) != num_requests:
        raise ValueError(
            f"actual_seq_lengths ({len(ends)}) and actual_seq_lengths_kv ({len(kv_lens)}) must "
            f"each have one entry per request ({num_requests}, len(seq_lens))"
        )
    total = query.shape[0]
    if ends and ends[-1] != total:
        raise ValueError(
            f"actual_seq_lengths must be cumulative query ends ending at the token count {total}, "
            f"got last {ends[-1]}"
        )
    block_size, columns = key_cache.shape[1], block_table.shape[1]
    prev = 0
    for i, (end, kv) in enumerate(zip(ends, kv_lens, strict=True)):
        q_len = end - prev
        prev = end
        if q_len < 0:
            raise ValueError("actual_seq_lengths must be non-decreasing (cumulative query ends)")
        if kv < q_len:
            raise ValueError(
                f"actual_seq_lengths_kv[{i}]={kv} must be >= its query length {q_len}"
            )
        if -(-kv // block_size) > columns:
            raise ValueError(
                f"actual_seq_lengths_kv[{i}]={kv} needs {-(-kv // block_size)} blocks but "
                f"block_table has {columns} columns"
            )
