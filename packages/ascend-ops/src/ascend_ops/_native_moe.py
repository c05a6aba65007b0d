"""CPU implementation of the MoE ops: vectorized torch (sort, gather, index_add, per-expert mm).

The MoE ops have no C++ kernel in ``ascend_ops._C``: their cost on CPU is the expert matmuls,
which torch's own GEMM already runs well, and the routing is index shuffling that torch
vectorizes. This module is what the ``native`` backend runs for them; it is checked against the
loop-based references in ``ascend_ops.reference.moe`` (same semantics, written out there).
"""

from __future__ import annotations

import torch


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
    out = x.new_zeros(x.shape[0], weight.shape[2])
    start = 0
    for e, n in enumerate(group_list.tolist()):
        if n:
            torch.mm(x[start : start + n], weight[e], out=out[start : start + n])
        start += n
    return out
