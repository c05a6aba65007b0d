# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""NPU branch of the MoE ops: torch_npu operators (torch-npu 2.13.0 published schemas).

* ``npu_moe_gating_top_k(x, k, *, bias, k_group, group_count, group_select_mode, renorm, norm_type,
  out_flag, routed_scaling_factor, eps) -> (y, expert_idx, out)``: ``norm_type`` 0 = softmax,
  1 = sigmoid; ``group_select_mode`` 0 = group max, 1 = sum of the group's top two; ``out_flag``
  returns the normalized scores ``out`` [T, E]. The kernel picks the experts; the weights are
  gathered from ``out`` and renormalized/scaled here, so renormalize and the scaling factor mean
  the same thing for both scoring functions (the kernel itself always renormalizes sigmoid weights).
* ``npu_moe_init_routing_v2(x, expert_idx, active_num=T*k, expert_num=E, expert_tokens_num_type=1,
  expert_tokens_num_flag=True, active_expert_range=[0, E], quant_mode=-1)``: vllm-ascend's call
  on A2 and A3 (vllm-project/vllm-ascend@182b75e ``vllm_ascend/ops/fused_moe/token_dispatcher.py``
  ``TokenDispatcherWithAllGather.token_dispatch`` -> ``device/device_op.py``
  ``npu_moe_init_routing``). Its rows are in the order of our contract (stable sort of the
  token-major ids); its ``expanded_row_idx`` is token-major (``[t*k + j]``) and becomes our
  slot-major ``[j*T + t]`` by a transpose; the sorted expert ids are scattered back on the device.
* ``npu_moe_token_unpermute(rows, sorted_indices, probs)`` for finalize: vllm-ascend's combine on
  A2/A3/310P (``token_dispatcher.py`` ``token_combine``); ``skip`` and the per-expert ``bias``
  (not operands of it) are added with aten ops.

The v1 pair ``npu_moe_init_routing`` / ``npu_moe_finalize_routing`` is documented for Atlas A2
only (torch-npu 2.13.0 ``_op_plugin_docs.py``, 支持的型号; Ascend/op-plugin@517f2e7
``docs/zh/custom_APIs/torch_npu/torch_npu-npu_moe_init_routing.md``), v2 and unpermute for A2
and A3 (``ascend_ops/simulator/soc.py`` lists the sources), so one path serves both.
* ``npu_grouped_matmul([x], [weight], group_list=counts, split_item=2, group_type=0,
  group_list_type=1)``: one [E, K, N] weight, groups split along M, ``group_list`` holds counts.
"""

from __future__ import annotations

import torch

from ascend_ops.npu.layers import torch_npu

_SCORING_NORM_TYPE = {"softmax": 0, "sigmoid": 1}


def moe_gating_top_k(router_logits, top_k, scoring, renormalize, num_expert_group, topk_group,
                     routed_scaling_factor, bias):
    _y, ids, scores = torch_npu().npu_moe_gating_top_k(
        router_logits,
        k=top_k,
        # the operator takes bias in x's dtype (torch_npu/_op_plugin_docs.py, npu_moe_gating_top_k)
        bias=None if bias is None else bias.to(router_logits.dtype),
        k_group=topk_group,
        group_count=num_expert_group,
        group_select_mode=1 if bias is not None else 0,
        renorm=0,
        norm_type=_SCORING_NORM_TYPE[scoring],
        out_flag=True,
        routed_scaling_factor=1.0,
        eps=1e-20,
    )
    weights = scores.float().gather(1, ids.long())
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    if routed_scaling_factor != 1.0:
        weights = weights * routed_scaling_factor
    return weights, ids.to(torch.int32)


#: largest expert_num of npu_moe_init_routing_v2 in count mode (_op_plugin_docs.py, 参数说明)
MAX_EXPERT_NUM = 10240


def moe_init_routing(x, expert_idx, num_experts=-1):
    num_tokens, k = expert_idx.shape
    ids = expert_idx.to(torch.int32)
    # expert_num bounds the ids; unknown (-1): the documented maximum (the counts are not used)
    experts = num_experts if num_experts > 0 else MAX_EXPERT_NUM
    expanded_x, row_idx, _counts, _scale = torch_npu().npu_moe_init_routing_v2(
        x,
        ids,
        active_num=num_tokens * k,
        expert_num=experts,
        expert_tokens_num_type=1,
        expert_tokens_num_flag=True,
        active_expert_range=[0, experts],
        quant_mode=-1,
    )
    flat_ids = ids.reshape(-1)
    # row_idx_type=0 is a gather index: pair p landed on row row_idx[p], so row row_idx[p] holds
    # expert flat_ids[p]; every id is in range, so every row is written
    sorted_ids = torch.empty_like(flat_ids).scatter_(0, row_idx.long(), flat_ids)
    slot_major = row_idx.view(num_tokens, k).t().reshape(-1)
    return expanded_x, slot_major.to(torch.int32), sorted_ids


def moe_finalize_routing(expanded_rows, scales, expanded_row_idx, expert_idx, skip, bias):
    num_tokens, k = scales.shape
    token_major = expanded_row_idx.view(k, num_tokens).t().reshape(-1).to(torch.int32)
    out = torch_npu().npu_moe_token_unpermute(
        expanded_rows, token_major, probs=scales.to(expanded_rows.dtype)
    )
    if skip is None and bias is None:
        return out
    acc = out.float()
    if bias is not None:  # sum_j scales[t, j] * bias[expert_idx[t, j]]
        acc = acc + (scales.float().unsqueeze(-1) * bias[expert_idx.long()].float()).sum(1)
    if skip is not None:
        acc = acc + skip.float()
    return acc.to(expanded_rows.dtype)


def grouped_matmul(x, weight, group_list, handle=-1):
    """``handle`` (a CPU pack of the native backend) does not apply here."""
    (out,) = torch_npu().npu_grouped_matmul(
        [x],
        [weight],
        group_list=group_list.to(torch.int64),
        split_item=2,
        group_type=0,
        group_list_type=1,
    )
    return out


def grouped_matmul_swiglu(x, weight, group_list, handle=-1):
    # torch_npu has no unquantized fused form (npu_grouped_matmul_swiglu_quant takes int8 weights
    # with weight_scale and x_scale): the two operators, as vllm-ascend's unquantized MoE runs them.
    return torch_npu().npu_swiglu(grouped_matmul(x, weight, group_list), dim=-1)


def pack_grouped_matmul_weight(weight) -> int:
    """No pack: the operator reads ``weight`` (packs are a native CPU layout)."""
    return -1
