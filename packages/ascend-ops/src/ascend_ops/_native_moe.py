# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""CPU implementation of the MoE ops: vectorized torch (sort, gather, index_add, per-expert mm),
plus the C++ grouped matmul of ``ascend_ops._C`` for decode-sized expert groups.

Routing is index shuffling that torch vectorizes. The expert matmuls at decode (a few rows per
expert) are bound by streaming the weights, and torch's per-expert ``mm`` calls stream them at
a fraction of memory bandwidth; ``_C.grouped_matmul`` reads every used expert's weights once,
over all experts in one OpenMP region. It takes N-major weights (stride 1 along K: vLLM's
[E, N, K] expert layout viewed as [E, K, N], what ``vllm_ascend_models`` passes) and runs while
the mean rows per expert stays at or below ``SMALL_GROUP_ROWS[dtype]`` (measured crossover on
an AVX-512 EPYC, where torch's GEMM wins at larger groups: float32 32, bf16 and fp16 8). Other
layouts and larger groups use the per-expert torch loop. Checked against the loop-based
references in ``ascend_ops.reference.moe`` (same semantics, written out there).
"""

from __future__ import annotations

import torch

from ascend_ops._dispatch import native_module
from ascend_ops._native import DTYPE_CODES

SMALL_GROUP_ROWS = {torch.float32: 32, torch.bfloat16: 8, torch.float16: 8}


def moe_gating_top_k(router_logits, top_k, scoring, renormalize, num_expert_group, topk_group,
                     routed_scaling_factor, bias):
    logits = router_logits.float()
    scores = torch.softmax(logits, dim=-1) if scoring == "softmax" else torch.sigmoid(logits)
    choice = scores + bias.float() if bias is not None else scores
    if num_expert_group > 1:
        t, e = choice.shape
        grouped = choice.view(t, num_expert_group, e // num_expert_group)
        if bias is not None:
            group_scores = grouped.topk(2, dim=-1).values.sum(dim=-1)
        else:
            group_scores = grouped.amax(dim=-1)
        kept = group_scores.topk(topk_group, dim=-1).indices
        keep = torch.zeros_like(group_scores, dtype=torch.bool).scatter_(1, kept, True)
        choice = grouped.masked_fill(~keep.unsqueeze(-1), float("-inf")).view(t, e)
    ids = choice.topk(top_k, dim=-1).indices
    weights = scores.gather(1, ids)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    if routed_scaling_factor != 1.0:
        weights = weights * routed_scaling_factor
    return weights, ids.to(torch.int32)


def moe_init_routing(x, expert_idx):
    num_tokens, k = expert_idx.shape
    flat = expert_idx.reshape(-1)  # token-major: position token * k + slot
    order = torch.sort(flat, stable=True).indices
    tokens = torch.div(order, k, rounding_mode="floor")
    slots = order % k
    expanded_x = x.index_select(0, tokens)
    expanded_row_idx = torch.empty(num_tokens * k, dtype=torch.int32, device=x.device)
    expanded_row_idx[slots * num_tokens + tokens] = torch.arange(
        num_tokens * k, dtype=torch.int32, device=x.device
    )
    return expanded_x, expanded_row_idx, flat.index_select(0, order).to(torch.int32)


def moe_finalize_routing(expanded_rows, scales, expanded_row_idx, expert_idx, skip, bias):
    num_tokens, k = scales.shape
    dest = expanded_row_idx.long().view(k, num_tokens).t()  # [T, k]
    rows = expanded_rows.float()[dest]  # [T, k, H]
    if bias is not None:
        rows = rows + bias.float()[expert_idx.long()]
    out = torch.einsum("tk,tkh->th", scales.float(), rows)
    if skip is not None:
        out = out + skip.float()
    return out.to(expanded_rows.dtype)


def grouped_matmul(x, weight, group_list):
    num_experts, k, n = weight.shape
    if weight.stride(1) == 1 and x.shape[0] <= SMALL_GROUP_ROWS[x.dtype] * num_experts:
        x = x.contiguous()
        counts = group_list.to(torch.int64).contiguous()
        out = x.new_empty(x.shape[0], n)
        native_module().grouped_matmul(
            x.data_ptr(), weight.data_ptr(), counts.data_ptr(), out.data_ptr(), x.shape[0], k, n,
            num_experts, weight.stride(0), weight.stride(2), DTYPE_CODES[x.dtype],
        )
        return out
    out = x.new_zeros(x.shape[0], n)
    start = 0
    for e, rows in enumerate(group_list.tolist()):
        if rows:
            torch.mm(x[start : start + rows], weight[e], out=out[start : start + rows])
        start += rows
    return out
