# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""MoE references: expert selection, token routing, grouped matmul, written as plain loops.

Semantics followed (and written out here so tests can read them):

* gating top-k: vLLM's ``GroupedTopk`` / DeepSeek-V2/V3 routing, which torch_npu's
  ``npu_moe_gating_top_k`` implements: scores = softmax or sigmoid of the router logits (float32);
  the choice score adds the optional correction ``bias``; with expert groups, a group's score is the
  max of its choice scores (no bias) or the sum of its two best (with bias, DeepSeek-V3), only the
  ``topk_group`` best groups stay eligible; the ``top_k`` best eligible experts win (descending
  choice score); their weights are the scores *without* bias, optionally renormalized to sum 1,
  then multiplied by ``routed_scaling_factor``.
* init routing (``npu_moe_init_routing``): the T*k (token, slot) pairs get the source index
  ``r = slot * T + token`` (slot-major, the ``row_idx`` torch_npu callers pass); pairs are ordered by
  expert id, ties kept in token order (stable sort of the token-major flattened ``expert_idx``);
  ``expanded_x[p]`` is the token of the p-th pair, ``expanded_row_idx[r]`` is where pair r landed.
* finalize routing (``npu_moe_finalize_routing``): out[t] = skip[t] +
  sum_j scales[t, j] * (rows[expanded_row_idx[j*T + t]] + bias[expert_idx[t, j]]).
* grouped matmul (``npu_grouped_matmul`` with one weight tensor [E, K, N], ``group_list_type=1``):
  consecutive row blocks of x, of sizes group_list[e], are multiplied by weight[e].
* grouped matmul + SwiGLU: ``swiglu(grouped_matmul(x, weight, group_list))`` with the product
  rounded to x's dtype in between, as when ``npu_grouped_matmul`` then ``npu_swiglu`` run.
"""

from __future__ import annotations

import torch

from ascend_ops.reference.activation import swiglu


def moe_gating_top_k(
    router_logits: torch.Tensor,
    top_k: int,
    scoring: str = "softmax",
    renormalize: bool = False,
    num_expert_group: int = 1,
    topk_group: int = 1,
    routed_scaling_factor: float = 1.0,
    bias: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """[T, E] logits -> (weights [T, top_k] float32, expert ids [T, top_k] int32)."""
    num_tokens, num_experts = router_logits.shape
    logits = router_logits.float()
    per_group = num_experts // num_expert_group
    weights = torch.zeros(num_tokens, top_k, dtype=torch.float32)
    ids = torch.zeros(num_tokens, top_k, dtype=torch.int32)
    for t in range(num_tokens):
        if scoring == "softmax":
            scores = torch.softmax(logits[t], dim=-1)
        else:
            scores = torch.sigmoid(logits[t])
        choice = scores + bias.float() if bias is not None else scores.clone()
        if num_expert_group > 1:
            group_score = []
            for g in range(num_expert_group):
                members = choice[g * per_group : (g + 1) * per_group]
                if bias is not None:
                    group_score.append(members.topk(2).values.sum())
                else:
                    group_score.append(members.max())
            kept = torch.stack(group_score).topk(topk_group).indices.tolist()
            for g in range(num_expert_group):
                if g not in kept:
                    choice[g * per_group : (g + 1) * per_group] = float("-inf")
        best = choice.topk(top_k).indices
        w = scores[best]
        if renormalize:
            w = w / w.sum()
        weights[t] = w * routed_scaling_factor
        ids[t] = best.to(torch.int32)
    return weights.to(router_logits.device), ids.to(router_logits.device)


def moe_init_routing(x: torch.Tensor, expert_idx: torch.Tensor):
    """x [T, H], expert_idx [T, k] -> (expanded_x [T*k, H], expanded_row_idx [T*k] int32,
    expanded_expert_idx [T*k] int32); index conventions in the module docstring."""
    num_tokens, k = expert_idx.shape
    pairs = []  # (expert, token, slot) in token-major order, then a stable sort by expert
    for t in range(num_tokens):
        for j in range(k):
            pairs.append((int(expert_idx[t, j]), t, j))
    pairs.sort(key=lambda p: p[0])  # list.sort is stable
    expanded_x = torch.stack([x[t] for _, t, _ in pairs]) if pairs else x.new_empty(0, x.shape[1])
    expanded_row_idx = torch.zeros(num_tokens * k, dtype=torch.int32)
    for dest, (_, t, j) in enumerate(pairs):
        expanded_row_idx[j * num_tokens + t] = dest
    expanded_expert_idx = torch.tensor([e for e, _, _ in pairs], dtype=torch.int32)
    return expanded_x, expanded_row_idx.to(x.device), expanded_expert_idx.to(x.device)


def moe_finalize_routing(
    expanded_rows: torch.Tensor,
    scales: torch.Tensor,
    expanded_row_idx: torch.Tensor,
    expert_idx: torch.Tensor,
    skip: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
) -> torch.Tensor:
    """Weighted sum of each token's expert rows back in token order -> [T, H] in rows' dtype."""
    num_tokens, k = scales.shape
    hidden = expanded_rows.shape[1]
    out = torch.zeros(num_tokens, hidden, dtype=torch.float32)
    for t in range(num_tokens):
        acc = skip[t].float().clone() if skip is not None else torch.zeros(hidden)
        for j in range(k):
            row = expanded_rows[int(expanded_row_idx[j * num_tokens + t])].float()
            if bias is not None:
                row = row + bias[int(expert_idx[t, j])].float()
            acc = acc + scales[t, j].float() * row
        out[t] = acc
    return out.to(expanded_rows.dtype)


def grouped_matmul(x: torch.Tensor, weight: torch.Tensor, group_list: torch.Tensor) -> torch.Tensor:
    """x [M, K] (rows grouped by expert), weight [E, K, N], group_list [E] row counts -> [M, N].

    Rows past sum(group_list) belong to no group and come back as zeros.
    """
    out = torch.zeros(x.shape[0], weight.shape[2], dtype=torch.float32)
    counts = group_list.tolist()
    if any(n < 0 for n in counts) or sum(counts) > x.shape[0]:
        raise ValueError(f"group_list: row counts {counts} must be >= 0 and sum to at most the "
                         f"{x.shape[0]} rows of x")
    start = 0
    for e, n in enumerate(counts):
        if n:
            out[start : start + n] = x[start : start + n].float() @ weight[e].float()
        start += n
    return out.to(x.dtype)


def grouped_matmul_swiglu(x: torch.Tensor, weight: torch.Tensor,
                          group_list: torch.Tensor) -> torch.Tensor:
    """x [M, K], weight [E, K, 2I] (gate columns then up columns) -> [M, I]: the SwiGLU of
    :func:`grouped_matmul`'s output."""
    return swiglu(grouped_matmul(x, weight, group_list))
