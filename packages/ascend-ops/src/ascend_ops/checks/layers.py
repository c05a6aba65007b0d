# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Argument validation shared by the ops: errors name the argument and what to change."""

from __future__ import annotations

import math

import torch

FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
INDEX_DTYPES = (torch.int32, torch.int64)


def tensor(name: str, t, ndim: int | None = None) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if ndim is not None and t.dim() != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}")


def float_tensor(name: str, t, ndim: int | None = None) -> None:
    tensor(name, t, ndim)
    if t.dtype not in FLOAT_DTYPES:
        raise TypeError(
            f"{name} must be float32, bfloat16 or float16, got {t.dtype}; cast it with .to(...)"
        )


def index_tensor(name: str, t, ndim: int | None = None) -> None:
    tensor(name, t, ndim)
    if t.dtype not in INDEX_DTYPES:
        raise TypeError(f"{name} must be int32 or int64, got {t.dtype}")


def same_dtype(name: str, t: torch.Tensor, ref_name: str, ref: torch.Tensor) -> None:
    if t.dtype != ref.dtype:
        raise TypeError(f"{name} dtype {t.dtype} must equal {ref_name} dtype {ref.dtype}")


def same_device(name: str, t: torch.Tensor, ref_name: str, ref: torch.Tensor) -> None:
    if t.device != ref.device:
        raise ValueError(f"{name} is on {t.device} but {ref_name} is on {ref.device}: pass both on "
                         "one device")


def group_counts(counts: list[int], rows: int) -> None:
    """Row counts of a grouped matmul read on the host (CPU paths): each >= 0, summing to at most
    the ``rows`` of x (the C++ kernels' rule, ``csrc/moe_groups.h``)."""
    if any(c < 0 for c in counts):
        raise ValueError("group_list: row counts must be >= 0")
    if sum(counts) > rows:
        raise ValueError(f"group_list: row counts sum to {sum(counts)}, more than the {rows} rows of x")


def same_shape(name: str, t: torch.Tensor, ref_name: str, ref: torch.Tensor) -> None:
    if t.shape != ref.shape:
        raise ValueError(
            f"{name} shape {tuple(t.shape)} must equal {ref_name} shape {tuple(ref.shape)}"
        )


def rms_norm(x, weight, eps) -> None:
    float_tensor("x", x)
    float_tensor("weight", weight, 1)
    if x.dim() < 1 or weight.shape[0] != x.shape[-1]:
        raise ValueError(
            f"weight shape {tuple(weight.shape)} must be [H] with H = x.shape[-1] ({tuple(x.shape)})"
        )
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps}")


def add_rms_norm(x, residual, weight, eps) -> None:
    rms_norm(x, weight, eps)
    float_tensor("residual", residual)
    same_shape("residual", residual, "x", x)
    same_dtype("residual", residual, "x", x)


def swiglu(x) -> None:
    float_tensor("x", x)
    if x.dim() < 1 or x.shape[-1] % 2:
        raise ValueError(f"x last dim must be even (gate and up halves), got shape {tuple(x.shape)}")


def rotary(positions, query, key, head_size, cos_sin_cache) -> None:
    index_tensor("positions", positions, 1)
    float_tensor("query", query)
    float_tensor("key", key)
    float_tensor("cos_sin_cache", cos_sin_cache, 2)
    same_dtype("key", key, "query", query)
    t = positions.shape[0]
    if head_size <= 0:
        raise ValueError(f"head_size must be positive, got {head_size}")
    for name, x in (("query", query), ("key", key)):
        if x.dim() < 2 or x.shape[0] != t or math.prod(x.shape[1:]) % head_size:
            raise ValueError(
                f"{name} shape {tuple(x.shape)} must be [T, H*head_size] (T={t}, head_size={head_size})"
            )
    rot = cos_sin_cache.shape[1]
    if rot % 2 or rot > head_size or rot == 0:
        raise ValueError(
            f"cos_sin_cache last dim (rotary_dim={rot}) must be even and <= head_size ({head_size})"
        )


def rotary_values(positions, cos_sin_cache) -> None:
    if positions.numel() and (
        int(positions.min()) < 0 or int(positions.max()) >= cos_sin_cache.shape[0]
    ):
        raise ValueError(
            f"positions must lie in [0, {cos_sin_cache.shape[0]}) (cos_sin_cache rows); "
            f"got range [{int(positions.min())}, {int(positions.max())}]"
        )


def reshape_and_cache(key, value, key_cache, value_cache, slot_mapping) -> None:
    float_tensor("key", key, 3)
    float_tensor("value", value, 3)
    from ascend_ops.checks import kv_cache as _checks_kv  # imports this module

    _checks_kv.cache_tensor("key_cache", key_cache, 4)
    _checks_kv.cache_tensor("value_cache", value_cache, 4)
    index_tensor("slot_mapping", slot_mapping, 1)
    # value may have its own head dim Dv (MLA: key = kv_c, value = k_pe, as ATB allows)
    if value.shape[:2] != key.shape[:2]:
        raise ValueError(
            f"value shape {tuple(value.shape)} must be [T, Hk, Dv] with key's T, Hk {tuple(key.shape)}"
        )
    if value_cache.shape[:3] != key_cache.shape[:3]:
        raise ValueError(
            f"value_cache shape {tuple(value_cache.shape)} must share key_cache's "
            f"[num_blocks, block_size, Hk] {tuple(key_cache.shape)}"
        )
    same_dtype("value", value, "key", key)
    same_dtype("value_cache", value_cache, "key_cache", key_cache)
    _checks_kv.cache_matches("key_cache", key_cache, "key", key)
    if key.shape[1:] != key_cache.shape[2:]:
        raise ValueError(
            f"key shape {tuple(key.shape)} must be [T, Hk, D] matching key_cache "
            f"[num_blocks, block_size, Hk, D] = {tuple(key_cache.shape)}"
        )
    if value.shape[2] != value_cache.shape[3]:
        raise ValueError(
            f"value head dim {value.shape[2]} must equal value_cache's {value_cache.shape[3]}"
        )
    if slot_mapping.shape[0] != key.shape[0]:
        raise ValueError(
            f"slot_mapping length {slot_mapping.shape[0]} must equal the token count {key.shape[0]}"
        )


def slot_values(slot_mapping, key_cache) -> None:
    capacity = key_cache.shape[0] * key_cache.shape[1]
    if slot_mapping.numel() and int(slot_mapping.max()) >= capacity:
        raise ValueError(
            f"slot_mapping has slot {int(slot_mapping.max())} >= cache capacity {capacity} "
            "(num_blocks * block_size)"
        )


LAYOUTS = ("TND", "BSND")


def attention(query, key_cache, value_cache, block_table, query_start_loc, seq_lens, layout) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    float_tensor("query", query, 3 if layout == "TND" else 4)
    from ascend_ops.checks import kv_cache as _checks_kv  # imports this module

    _checks_kv.cache_tensor("key_cache", key_cache, 4)
    _checks_kv.cache_tensor("value_cache", value_cache, 4)
    same_shape("value_cache", value_cache, "key_cache", key_cache)
    same_dtype("value_cache", value_cache, "key_cache", key_cache)
    _checks_kv.cache_matches("key_cache", key_cache, "query", query)
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
