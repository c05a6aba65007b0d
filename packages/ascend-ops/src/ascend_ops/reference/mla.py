# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""MLA reference kernels (semantics of vllm-ascend's MLA decode on npu_fused_infer_attention_score
with ``query_rope``/``key_rope``), vectorised over requests with padded batches.

Lengths are host lists (as the NPU operator takes them); every index tensor is built on the host
from them, so no device value is read back.
"""

from __future__ import annotations

import torch


def _segments(ends: list[int], kv_lens: list[int], device):
    """Host-built index tensors of a padded [B, max_q] x [B, max_kv] batch.

    Returns (q_rows [B, max_q] long, q_valid [B, max_q] bool, visible [B, max_q, max_kv] bool,
    max_kv): row t of request b's i-th query; key j visible to it when j < kv_len and
    j <= kv_len - q_len + i (bottom-right aligned causal).
    """
    ends_t = torch.tensor(ends, dtype=torch.long)
    starts = torch.cat([ends_t.new_zeros(1), ends_t[:-1]])
    q_lens = ends_t - starts
    kv = torch.tensor(kv_lens, dtype=torch.long)
    max_q = int(q_lens.max()) if len(ends) else 0
    max_kv = int(kv.max()) if len(ends) else 0
    i = torch.arange(max_q)
    j = torch.arange(max_kv)
    q_valid = i[None, :] < q_lens[:, None]
    q_rows = (starts[:, None] + i[None, :]).clamp(max=max(int(ends_t[-1]) - 1, 0) if len(ends) else 0)
    limit = (kv - q_lens)[:, None, None] + i[None, :, None]
    visible = (j[None, None, :] <= limit) & (j[None, None, :] < kv[:, None, None])
    return (q_rows.to(device), q_valid.to(device), visible.to(device), max_kv)


def _paged_rows(cache: torch.Tensor, block_table: torch.Tensor, max_kv: int) -> torch.Tensor:
    """[B, max_kv, width] rows of each request from a [num_blocks, block_size, 1, width] cache."""
    block_size = cache.shape[1]
    pos = torch.arange(max_kv, device=cache.device)
    cols = (pos // block_size).clamp(max=block_table.shape[1] - 1)
    slots = block_table[:, cols].long() * block_size + pos % block_size  # [B, max_kv]
    return cache.reshape(-1, cache.shape[-1])[slots]


def _attend(scores: torch.Tensor, visible: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """scores [B, N, Q, K], visible [B, Q, K], values [B, K, D] or [B, K, N, D] -> [B, Q, N, D]."""
    scores = scores.masked_fill(~visible[:, None], float("-inf"))
    probs = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # empty rows (padding) -> 0
    if values.dim() == 3:
        return torch.einsum("bnqk,bkd->bqnd", probs, values)
    return torch.einsum("bnqk,bknd->bqnd", probs, values)


def mla_decode(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, ends, kv_lens, scale):
    """Latent attention: query token t of request b, head n scores latent row j by
    ``scale * (q_nope[t, n] . kv_c[j] + q_pe[t, n] . k_pe[j])`` over b's visible rows (causal,
    bottom-right aligned) and returns the softmax-weighted sum of ``kv_c`` rows -> [T, N, L]."""
    acc = torch.promote_types(q_nope.dtype, torch.float32)
    out = torch.zeros(q_nope.shape, dtype=acc, device=q_nope.device)
    if not ends:
        return out.to(q_nope.dtype)
    q_rows, q_valid, visible, max_kv = _segments(ends, kv_lens, q_nope.device)
    kc = _paged_rows(kv_c_cache, block_table, max_kv).to(acc)  # [B, K, L]
    kr = _paged_rows(k_pe_cache, block_table, max_kv).to(acc)  # [B, K, R]
    qn = q_nope[q_rows].to(acc)  # [B, Q, N, L]
    qr = q_pe[q_rows].to(acc)
    scores = (torch.einsum("bqnl,bkl->bnqk", qn, kc) + torch.einsum("bqnr,bkr->bnqk", qr, kr)) * scale
    res = _attend(scores, visible, kc)  # [B, Q, N, L]
    out[q_rows[q_valid]] = res[q_valid]
    return out.to(q_nope.dtype)


def mla_prefill(query, key, value, ends, kv_lens, scale):
    """Causal varlen attention: request b's queries (rows ends[b-1]:ends[b]) are the last q_len
    of its kv_lens[b] keys, which are rows sum(kv_lens[:b]) onward of ``key``/``value``.
    query/key [*, N, Dqk], value [*, N, Dv] -> [T, N, Dv]."""
    acc = torch.promote_types(query.dtype, torch.float32)
    out = torch.zeros(*query.shape[:2], value.shape[-1], dtype=acc, device=query.device)
    if not ends:
        return out.to(query.dtype)
    q_rows, q_valid, visible, max_kv = _segments(ends, kv_lens, query.device)
    kv = torch.tensor(kv_lens, dtype=torch.long)
    kv_start = torch.cumsum(kv, 0) - kv
    rows = (kv_start[:, None] + torch.arange(max_kv)[None, :]).clamp(max=max(int(kv.sum()) - 1, 0))
    rows = rows.to(query.device)
    k = key[rows].to(acc)  # [B, K, N, D]
    v = value[rows].to(acc)
    q = query[q_rows].to(acc)  # [B, Q, N, D]
    scores = torch.einsum("bqnd,bknd->bnqk", q, k) * scale
    res = _attend(scores, visible, v)
    out[q_rows[q_valid]] = res[q_valid]
    return out.to(query.dtype)
