# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Reference kernels of the simulated torch_npu MoE operators: the published operator
semantics, written independently of ``ascend_ops.reference.moe`` (per-row loops over the raw index arguments), plus
the modes the simulator models (renorm=0, drop_pad_mode=0, one [E, K, N] weight with counts);
the documented dtype/index rules are checked in ``constraints`` before these run."""

from __future__ import annotations

import torch


def npu_moe_gating_top_k(x, k, bias, input_ids, tid2eid, k_group, group_count, group_select_mode,
                         renorm, norm_type, out_flag, routed_scaling_factor, eps):
    if input_ids is not None or tid2eid is not None or renorm != 0:
        raise NotImplementedError("simulated gating top-k models renorm=0 without input_ids/tid2eid")
    t, e = x.shape
    if e % group_count or not 1 <= k_group <= group_count:
        raise ValueError("group_count must divide the expert count and k_group <= group_count")
    norm = torch.softmax(x.float(), -1) if norm_type == 0 else torch.sigmoid(x.float())
    y = torch.empty(t, k, dtype=x.dtype)
    idx = torch.empty(t, k, dtype=torch.int32)
    size = e // group_count
    for row in range(t):
        choice = [float(norm[row, i]) + (float(bias[i]) if bias is not None else 0.0) for i in range(e)]
        if group_count > 1:
            def group_score(g, choice=choice):
                vals = sorted(choice[g * size:(g + 1) * size], reverse=True)
                return vals[0] + vals[1] if group_select_mode == 1 else vals[0]
            kept = sorted(range(group_count), key=lambda g: -group_score(g))[:k_group]
            choice = [c if i // size in kept else float("-inf") for i, c in enumerate(choice)]
        best = sorted(range(e), key=lambda i: -choice[i])[:k]
        vals = torch.tensor([float(norm[row, i]) for i in best])
        if norm_type == 1:  # the kernel renormalizes sigmoid weights
            vals = vals / (vals.sum() + eps)
        y[row] = (vals * routed_scaling_factor).to(x.dtype)
        idx[row] = torch.tensor(best, dtype=torch.int32)
    out = norm if out_flag else torch.empty(0)
    return y, idx, out


def npu_moe_init_routing(x, row_idx, expert_idx, active_num):
    if row_idx.dtype != torch.int32 or expert_idx.dtype != torch.int32:
        raise TypeError("npu_moe_init_routing takes int32 row_idx and expert_idx")
    n, k = expert_idx.shape
    flat_e = expert_idx.reshape(-1).tolist()
    flat_r = row_idx.reshape(-1).tolist()
    order = sorted(range(n * k), key=lambda p: flat_e[p])  # stable over the flattened input
    dst_to_src = [flat_r[p] for p in order]
    expanded_row_idx = torch.empty(n * k, dtype=torch.int32)
    for dst, src in enumerate(dst_to_src):
        expanded_row_idx[src] = dst
    active = min(active_num, n) * k
    expanded_x = x[torch.tensor(dst_to_src[:active], dtype=torch.long) % n]
    return expanded_x, expanded_row_idx, torch.tensor([flat_e[p] for p in order], dtype=torch.int32)


def npu_moe_finalize_routing(expanded_permuted_rows, skip1, skip2, bias, scales, expanded_src_to_dst_row,
                             export_for_source_row, drop_pad_mode, k):
    if drop_pad_mode != 0:
        raise NotImplementedError("simulated finalize routing models drop_pad_mode=0")
    if scales is not None and scales.dtype != expanded_permuted_rows.dtype:
        raise TypeError("npu_moe_finalize_routing needs scales in the rows' dtype")
    t, kk = scales.shape
    out = torch.zeros(t, expanded_permuted_rows.shape[1], dtype=torch.float32)
    for row in range(t):
        for j in range(kk):
            r = expanded_permuted_rows[int(expanded_src_to_dst_row[row + j * t])].float()
            if bias is not None:
                r = r + bias[int(export_for_source_row[row, j])].float()
            out[row] += float(scales[row, j]) * r
        for s in (skip1, skip2):
            if s is not None:
                out[row] += s[row].float()
    return out.to(expanded_permuted_rows.dtype)


def npu_grouped_matmul(x, weight, **kw):
    if len(x) != 1 or len(weight) != 1 or weight[0].dim() != 3:
        raise NotImplementedError("simulated grouped matmul models one x and one [E, K, N] weight")
    if (kw["split_item"], kw["group_type"], kw["group_list_type"]) != (2, 0, 1):
        raise NotImplementedError("simulated grouped matmul models split_item=2, group_type=0, group_list_type=1")
    gl = kw["group_list"]
    if gl is None:
        raise NotImplementedError("simulated grouped matmul needs group_list (counts per expert)")
    counts = gl.tolist() if isinstance(gl, torch.Tensor) else list(gl)
    xs, w = x[0], weight[0]
    out = torch.zeros(xs.shape[0], w.shape[2], dtype=xs.dtype)
    start = 0
    for e, n in enumerate(counts):
        for r in range(start, start + n):
            out[r] = (xs[r].float() @ w[e].float()).to(xs.dtype)
        start += n
    return [out]


def npu_moe_init_routing_v2(x, expert_idx, scale, offset, active_num, expert_capacity, expert_num,
                            drop_pad_mode, expert_tokens_num_type, expert_tokens_num_flag, quant_mode,
                            active_expert_range, row_idx_type, x_dtype):
    """Semantics of Ascend/op-plugin@517f2e7 docs/zh/custom_APIs/torch_npu/
    torch_npu-npu_moe_init_routing_v2.md (功能说明 formulas and its ``cpu_op_exec`` golden):
    the token-major flattened ``expert_idx`` (pair p = t*K + j) is stably sorted by expert, ids
    below ``expert_start`` sorting last; ``expanded_x[i] = x[sorted[i] // K]`` for the first
    ``min(active_num, in-range pairs)`` rows (active_num 0/-1: all in-range pairs); row_idx_type 0
    gives the gather index ``expanded_row_idx[sorted[i]] = i`` (-1 for pairs out of range), 1 the
    scatter index ``sorted``; counts per expert of [start, end) (type 1) or their cumsum (type
    0). Rows and scales the documents call undefined come back as NaN (-1 for indices)."""
    if quant_mode != -1 or drop_pad_mode != 0 or scale is not None or offset is not None:
        raise NotImplementedError("simulated init routing v2 models quant_mode=-1, drop_pad_mode=0, no scale/offset")
    if expert_tokens_num_type not in (0, 1):
        raise NotImplementedError("simulated init routing v2 models expert_tokens_num_type 0 (cumsum) and 1 (count)")
    t, k = expert_idx.shape
    start, end = active_expert_range if len(active_expert_range) == 2 else (0, expert_num)
    flat = expert_idx.reshape(-1).tolist()
    keys = [e if e >= start else 2**31 - 1 for e in flat]
    order = sorted(range(t * k), key=lambda p: keys[p])  # sorted() is stable
    valid = sum(1 for e in flat if start <= e < end)
    active = valid if active_num in (0, -1) else min(active_num, valid)
    expanded_x = torch.full((t * k, x.shape[1]), float("nan"), dtype=x.dtype) if x.is_floating_point() \
        else torch.zeros(t * k, x.shape[1], dtype=x.dtype)
    for i in range(active):
        expanded_x[i] = x[order[i] // k]
    if row_idx_type == 1:
        row_idx = torch.tensor(order, dtype=torch.int32)
    else:
        row_idx = torch.full((t * k,), -1, dtype=torch.int32)
        for i in range(valid):
            row_idx[order[i]] = i
    counts = torch.zeros(end - start, dtype=torch.int64)
    for e in flat:
        if start <= e < end:
            counts[e - start] += 1
    if expert_tokens_num_type == 0:
        counts = counts.cumsum(0)
    return expanded_x, row_idx, counts, torch.full((t * k,), float("nan"), dtype=torch.float32)


def npu_moe_token_unpermute(permuted_tokens, sorted_indices, probs, padded_mode, restore_shape):
    """``out[t] = sum_j probs[t, j] * permuted_tokens[sorted_indices[t*K + j]]`` (K = probs.shape[1],
    1 without probs), accumulated in float32, in permuted_tokens' dtype. The index is the gather
    form (what init routing v2 returns with row_idx_type=0): Ascend/op-plugin@517f2e7
    test/test_custom_ops/test_npu_moe_token_permute_and_unpermute.py ``test_unpermute`` passes the
    operator ``argsort(flat_ids)`` and its index_copy_ golden the inverse permutation;
    vllm-project/vllm-ascend@182b75e ``TokenDispatcherWithAllGather.token_combine`` passes init
    routing v2's ``expanded_row_idx``."""
    if padded_mode:
        raise NotImplementedError("simulated token unpermute models padded_mode=False")
    k = probs.shape[1] if probs is not None else 1
    n = sorted_indices.shape[0] // k
    idx = sorted_indices.tolist()
    out = torch.zeros(n, permuted_tokens.shape[1], dtype=torch.float32)
    for t in range(n):
        for j in range(k):
            w = float(probs[t, j]) if probs is not None else 1.0
            out[t] += w * permuted_tokens[idx[t * k + j]].float()
    return out.to(permuted_tokens.dtype)


MOE_KERNELS = {
    "npu_moe_gating_top_k": npu_moe_gating_top_k,
    "npu_moe_init_routing": npu_moe_init_routing,
    "npu_moe_init_routing_v2": npu_moe_init_routing_v2,
    "npu_moe_token_unpermute": npu_moe_token_unpermute,
    "npu_moe_finalize_routing": npu_moe_finalize_routing,
    "npu_grouped_matmul": npu_grouped_matmul,
}
