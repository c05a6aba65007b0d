# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Sparse-attention reference kernels (DeepSeek-V3.2 DSA), the semantics of torch_npu's
``npu_lightning_indexer`` and ``npu_sparse_flash_attention`` (MLA-absorb, paged KV) as
vllm-ascend calls them (``vllm_ascend/device/device_op.py``@182b75e: TND query, PA_BSND cache).

Sources: Ascend/op-plugin@517f2e7 ``docs/zh/custom_APIs/torch_npu/torch_npu-npu_lightning_indexer.md``
and ``torch_npu-npu_sparse_flash_attention.md`` (formulas); the kernels vllm-ascend builds,
``csrc/attention/lightning_indexer/op_kernel/arch22/`` (top-k slots start as (-inf, -1): a
position the query cannot see is never selected and unfilled slots stay -1) and
``csrc/attention/sparse_flash_attention/op_kernel/arch22/sparse_flash_attention_kernel_mla.h``
(``CalcSinnerTopKBegin``: which entries of a row are read).

Request b owns query rows ``ends[b-1]:ends[b]`` (q_len of them, the last q_len of its kv_len
positions); with ``causal`` query i sees positions j < kv_len - q_len + i + 1, else j < kv_len
("visible"). Positions are logical, within the request; the block table maps them to cache rows.
Rows past ``ends[-1]`` are padding (indexer: all -1, attention: zeros). Math in float32,
vectorised per request and chunked over query rows (bounded temporaries).
"""

from __future__ import annotations

import torch

#: elements of the largest per-chunk temporary (query rows x heads x keys, or rows x K x width)
_CHUNK_ELEMENTS = 1 << 24


def _starts(ends: list[int]) -> list[int]:
    return [0, *ends[:-1]]


def _request_rows(cache: torch.Tensor, block_table: torch.Tensor, b: int, positions: torch.Tensor) -> torch.Tensor:
    """Cache rows ([..., width]) of request b's logical ``positions`` (long, any shape, >= 0)."""
    bs = cache.shape[1]
    table = block_table[b].long()
    slots = table[positions // bs] * bs + positions % bs
    return cache.reshape(-1, cache.shape[-1])[slots]


def _visible(q_len: int, kv_len: int, causal: bool, device) -> torch.Tensor:
    """[q_len] long: how many positions each query of the request sees."""
    if not causal:
        return torch.full((q_len,), kv_len, dtype=torch.long, device=device)
    return torch.arange(q_len, device=device) + (kv_len - q_len + 1)


def lightning_indexer(query, key_cache, weights, block_table, ends, kv_lens, sparse_count, causal):
    """Top-``sparse_count`` positions per query token.

    Score of position j for query row t: ``sum_h weights[t, h] * relu(query[t, h] . key[j])``
    over the visible positions (op-plugin formula: ``[1]_{1xg} @ [(W @ [1]) * ReLU(Q K^T)]``).
    Row t of the result lists the min(sparse_count, visible) best positions by descending score
    (ties: the lower position first), then -1. Returns int32 [T, 1, sparse_count].
    """
    t_total = query.shape[0]
    out = torch.full((t_total, 1, sparse_count), -1, dtype=torch.int32, device=query.device)
    keys = key_cache[:, :, 0]  # [num_blocks, block_size, D]
    for b, (start, end) in enumerate(zip(_starts(ends), ends, strict=True)):
        q_len, kv_len = end - start, kv_lens[b]
        if q_len == 0 or kv_len == 0:
            continue
        k = _request_rows(keys, block_table, b, torch.arange(kv_len, device=query.device)).float()
        visible = _visible(q_len, kv_len, causal, query.device)
        keep = min(sparse_count, kv_len)
        step = max(1, _CHUNK_ELEMENTS // max(1, query.shape[1] * kv_len))
        for r0 in range(0, q_len, step):
            r1 = min(q_len, r0 + step)
            q = query[start + r0:start + r1].float()  # [r, N, D]
            w = weights[start + r0:start + r1].float()  # [r, N]
            scores = torch.einsum("rnd,kd->rnk", q, k).relu_()
            scores = torch.einsum("rnk,rn->rk", scores, w)
            seen = visible[r0:r1]
            hidden = torch.arange(kv_len, device=query.device)[None, :] >= seen[:, None]
            scores.masked_fill_(hidden, float("-inf"))
            order = torch.sort(scores, dim=-1, descending=True, stable=True).indices[:, :keep]
            filled = torch.arange(keep, device=query.device)[None, :] < seen[:, None]
            out[start + r0:start + r1, 0, :keep] = torch.where(filled, order, -1).to(torch.int32)
    return out


def selected_mask(rows: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
    """Which entries of index rows [r, K] the sparse attention reads: entry c of a row counts
    when it comes before the row's first -1, c < min(K, visible) (the kernel reads at most that
    many entries: ``validCount``), and 0 <= position < visible (``blockBegin >= threshold`` is
    skipped). ``visible`` [r] long. Returns bool [r, K]."""
    k = rows.shape[1]
    before_pad = torch.cumprod((rows != -1).to(torch.int32), dim=1).bool()
    within = torch.arange(k, device=rows.device)[None, :] < visible[:, None]
    return before_pad & within & (rows >= 0) & (rows < visible[:, None])


def sparse_flash_attention(q_nope, q_pe, kv_c_cache, k_pe_cache, sparse_indices, block_table, ends,
                           kv_lens, scale, causal):
    """MLA-absorb attention over the selected positions of each query token.

    Token t (request b, head n) scores each selected position j by
    ``scale * (q_nope[t, n] . kv_c[j] + q_pe[t, n] . k_pe[j])``, takes the softmax over the
    selected entries (:func:`selected_mask`; a position listed twice counts twice, as the
    kernel gathers per entry) and returns the weighted sum of ``kv_c`` rows; a token with no
    selected entry gets zeros (the kernel's ``DealActSeqLenIsZero``). Returns [T, N, L] in
    q_nope's dtype.
    """
    t_total, heads, width = q_nope.shape
    out = torch.zeros(t_total, heads, width, dtype=torch.float32, device=q_nope.device)
    kc_flat, kr_flat = kv_c_cache[:, :, 0], k_pe_cache[:, :, 0]
    k = sparse_indices.shape[2]
    for b, (start, end) in enumerate(zip(_starts(ends), ends, strict=True)):
        q_len, kv_len = end - start, kv_lens[b]
        if q_len == 0 or kv_len == 0:
            continue
        visible = _visible(q_len, kv_len, causal, q_nope.device)
        step = max(1, _CHUNK_ELEMENTS // max(1, k * (width + q_pe.shape[2] + heads)))
        for r0 in range(0, q_len, step):
            r1 = min(q_len, r0 + step)
            rows = sparse_indices[start + r0:start + r1, 0].long()  # [r, K]
            use = selected_mask(rows, visible[r0:r1])
            pos = torch.where(use, rows, 0)
            kc = _request_rows(kc_flat, block_table, b, pos).float()  # [r, K, L]
            kr = _request_rows(kr_flat, block_table, b, pos).float()  # [r, K, R]
            scores = (torch.einsum("rnl,rkl->rnk", q_nope[start + r0:start + r1].float(), kc)
                      + torch.einsum("rnd,rkd->rnk", q_pe[start + r0:start + r1].float(), kr)) * scale
            scores.masked_fill_(~use[:, None, :], float("-inf"))
            probs = torch.softmax(scores, dim=-1).nan_to_num_(0.0)  # no entry -> zero row
            out[start + r0:start + r1] = torch.einsum("rnk,rkl->rnl", probs, kc)
    return out.to(q_nope.dtype)
