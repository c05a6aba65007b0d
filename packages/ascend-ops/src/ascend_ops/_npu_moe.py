# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""NPU branch of the MoE ops: torch_npu operators (torch-npu 2.13.0 published schemas).

* ``npu_moe_gating_top_k(x, k, *, bias, k_group, group_count, group_select_mode, renorm, norm_type,
  out_flag, routed_scaling_factor, eps) -> (y, expert_idx, out)``: ``norm_type`` 0 = softmax,
  1 = sigmoid; ``group_select_mode`` 0 = group max, 1 = sum of the group's top two; ``out_flag``
  returns the normalized scores ``out`` [T, E]. The kernel picks the experts; the weights are
  gathered from ``out`` and renormalized/scaled here, so renormalize and the scaling factor mean
  the same thing for both scoring functions (the kernel itself always renormalizes sigmoid weights).
* ``npu_moe_init_routing(x, row_idx, expert_idx, active_num)`` with the conventional slot-major
  ``row_idx[t, j] = j * T + t``.
* ``npu_moe_finalize_routing(expanded_permuted_rows, skip1, skip2, bias, scales,
  expanded_src_to_dst_row, export_for_source_row, drop_pad_mode)``.
* ``npu_grouped_matmul([x], [weight], group_list=counts, split_item=2, group_type=0,
  group_list_type=1)``: one [E, K, N] weight, groups split along M, ``group_list`` holds counts.
"""

from __future__ import annotations

import torch

from ascend_ops._npu import torch_npu

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


def moe_init_routing(x, expert_idx):
    num_tokens, k = expert_idx.shape
    row_idx = (
        torch.arange(num_tokens * k, dtype=torch.int32, device=x.device).view(k, num_tokens).t().contiguous()
    )
    expanded_x, expanded_row_idx, expanded_expert_idx = torch_npu().npu_moe_init_routing(
        x, row_idx, expert_idx.to(torch.int32), active_num=num_tokens
    )
    return expanded_x, expanded_row_idx.to(torch.int32), expanded_expert_idx.to(torch.int32)


def moe_finalize_routing(expanded_rows, scales, expanded_row_idx, expert_idx, skip, bias):
    return torch_npu().npu_moe_finalize_routing(
        expanded_rows,
        skip1=skip,
        skip2=None,
        bias=bias,
        scales=scales.to(expanded_rows.dtype),
        expanded_src_to_dst_row=expanded_row_idx.to(torch.int32),
        export_for_source_row=expert_idx.to(torch.int32),
        drop_pad_mode=0,
    )


def grouped_matmul(x, weight, group_list):
    (out,) = torch_npu().npu_grouped_matmul(
        [x],
        [weight],
        group_list=group_list.to(torch.int64),
        split_item=2,
        group_type=0,
        group_list_type=1,
    )
    return out


def grouped_matmul_swiglu(x, weight, group_list):
    # torch_npu has no unquantized fused form (npu_grouped_matmul_swiglu_quant takes int8 weights
    # with weight_scale and x_scale): the two operators, as vllm-ascend's unquantized MoE runs them.
    return torch_npu().npu_swiglu(grouped_matmul(x, weight, group_list), dim=-1)
