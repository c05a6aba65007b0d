# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Documented constraints of the MoE operators the plugin calls on every SoC
(``npu_moe_init_routing_v2``, ``npu_moe_token_unpermute``); registered in ``constraints.RULES``.

Sources: [PLUGIN] ``torch_npu/_op_plugin_docs.py`` of the torch-npu 2.13.0 wheel (参数说明 /
约束说明 of the operator); [VA] vllm-project/vllm-ascend@182b75e call sites, where hardware use
contradicts a document (then the hardware-proven call wins: it ran on A2/A3/310P).
"""

from __future__ import annotations

import torch

from ascend_ops.simulator.constraints.base import HALF, _dtype, _need


def moe_init_routing_v2(a: dict, op="npu_moe_init_routing_v2") -> None:
    x, idx = a["x"], a["expert_idx"]
    # [PLUGIN] x: 2D (NUM_ROWS, H), float16/bfloat16/float32/int8; expert_idx: 2D (NUM_ROWS, K) int32.
    _need(x.dim() == 2, op, "x must be 2-D [num_rows, hidden]")
    _dtype(x, (*HALF, torch.float32, torch.int8), op, "x")
    _dtype(idx, (torch.int32,), op, "expert_idx")
    _need(idx.dim() == 2 and idx.shape[0] == x.shape[0], op, "expert_idx must be 2-D [num_rows, k] with x's rows")
    # [PLUGIN] expert_num > 0 (<= 5120 for key_value counts, else <= 10240)
    e = a["expert_num"]
    limit = 5120 if a["expert_tokens_num_type"] == 2 else 10240
    _need(0 < e <= limit, op, f"expert_num must be in (0, {limit}]")
    # [PLUGIN] 专家id不能超过专家数 (expert ids may not exceed the expert count)
    _need(idx.numel() == 0 or int(idx.max()) < e, op, "expert ids must be < expert_num")
    # [PLUGIN] drop_pad_mode: 当前仅支持0; quant_mode: 当前仅支持-1和1 (int8 x: only -1)
    _need(a["drop_pad_mode"] == 0, op, "drop_pad_mode must be 0 (the only supported value)")
    _need(a["quant_mode"] in (-1, 1), op, "quant_mode must be -1 or 1")
    _need(x.dtype != torch.int8 or a["quant_mode"] == -1, op, "int8 x takes quant_mode=-1 only")
    # [PLUGIN] active_num >= -1 in the dropless case
    _need(a["active_num"] >= -1, op, "active_num must be >= -1")
    # [PLUGIN] active_expert_range [expert_start, expert_end): values >= 0, expert_end <= expert_num
    rng = list(a["active_expert_range"])
    if rng:
        _need(len(rng) == 2 and 0 <= rng[0] < rng[1] <= e, op,
              "active_expert_range must be [start, end) with 0 <= start < end <= expert_num")
    # [PLUGIN] row_idx_type 0 (gather) or 1 (scatter)
    _need(a["row_idx_type"] in (0, 1), op, "row_idx_type must be 0 or 1")
    # expert_tokens_num_flag / expert_tokens_num_type: [PLUGIN] says "当前仅支持True" and "仅支持1和2",
    # but [VA] vllm_ascend/_310p/fused_moe/token_dispatcher.py runs type 0 (cumsum) with the flag
    # left False on 310P hardware: not enforced.


def moe_token_unpermute(a: dict, op="npu_moe_token_unpermute") -> None:
    tokens, idx, probs = a["permuted_tokens"], a["sorted_indices"], a["probs"]
    # [PLUGIN] permuted_tokens 2D (num_tokens*topK, hidden); sorted_indices 1D (num_tokens*topK);
    # probs 2D (num_tokens, topK), topK = probs.shape[1] (1 without probs)
    _need(tokens.dim() == 2, op, "permuted_tokens must be 2-D [num_tokens * top_k, hidden]")
    _need(idx.dim() == 1 and idx.shape[0] == tokens.shape[0], op,
          "sorted_indices must be 1-D with one entry per permuted_tokens row")
    # [PLUGIN] sorted_indices int64; its own example and [VA] (vllm_ascend/device/device_op.py,
    # npu_moe_token_unpermute: init routing v2's int32 expanded_row_idx) use int32
    _dtype(idx, (torch.int32, torch.int64), op, "sorted_indices")
    if probs is not None:
        _need(probs.dim() == 2 and probs.numel() == idx.shape[0], op,
              "probs must be [num_tokens, top_k] with num_tokens * top_k = sorted_indices' length")
    # [PLUGIN] permuted_tokens bfloat16; [VA] the 310P path (no bfloat16 there) runs float16
    _dtype(tokens, HALF, op, "permuted_tokens")
    # [PLUGIN] padded_mode: 目前仅支持为False
    _need(not a["padded_mode"], op, "padded_mode must be False (the only supported value)")
    _need(idx.numel() == 0 or (int(idx.min()) >= 0 and int(idx.max()) < tokens.shape[0]), op,
          "sorted_indices must index permuted_tokens' rows (vllm-ascend passes torch.abs of init routing's -1s)")


MOE_RULES = {
    "npu_moe_init_routing_v2": moe_init_routing_v2,
    "npu_moe_token_unpermute": moe_token_unpermute,
}
