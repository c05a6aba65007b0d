# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Paged attention reference (semantics of npu_fused_infer_attention_score, TND layout, paged KV)."""

from __future__ import annotations

import torch


def _gather(cache: torch.Tensor, blocks: torch.Tensor, kv_len: int) -> torch.Tensor:
    # cache: [num_blocks, block_size, Hk, D] -> [kv_len, Hk, D]
    return cache.index_select(0, blocks).flatten(0, 1)[:kv_len]


def fused_infer_attention(
    query: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    block_table: torch.Tensor,
    query_start_loc: torch.Tensor,
    seq_lens: torch.Tensor,
    scale: float,
    causal: bool = True,
) -> torch.Tensor:
    """Attention of TND ``query`` over the paged cache, one request at a time, in float32.

    Request b owns query rows qsl[b]:qsl[b+1], which are the last q_len of its seq_lens[b] KV
    positions; causal query i sees kv positions j <= seq_lens[b] - q_len + i.
    """
    acc = torch.promote_types(query.dtype, torch.float32)
    num_heads = query.shape[1]
    block_size = key_cache.shape[1]
    group = num_heads // key_cache.shape[2]
    out = torch.zeros(query.shape, dtype=acc, device=query.device)
    qsl = [int(v) for v in query_start_loc.tolist()]
    lens = [int(v) for v in seq_lens.tolist()]
    for b, kv_len in enumerate(lens):
        start, end = qsl[b], qsl[b + 1]
        q_len = end - start
        if q_len == 0 or kv_len == 0:
            continue
        nblk = (kv_len + block_size - 1) // block_size
        blocks = block_table[b, :nblk].long()
        k = _gather(key_cache, blocks, kv_len).to(acc).repeat_interleave(group, dim=1)
        v = _gather(value_cache, blocks, kv_len).to(acc).repeat_interleave(group, dim=1)
        q = query[start:end].to(acc)
        scores = torch.einsum("qhd,khd->hqk", q, k) * scale
        if causal:
            qpos = torch.arange(q_len, device=query.device)[:, None] + (kv_len - q_len)
            kpos = torch.arange(kv_len, device=query.device)[None, :]
            scores = scores.masked_fill(kpos > qpos, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        out[start:end] = torch.einsum("hqk,khd->qhd", probs, v)
    return out.to(query.dtype)
