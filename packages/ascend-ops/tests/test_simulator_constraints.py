# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Documented operator constraints: a violating call raises SimulatedNpuError naming the operator
and the rule (sources cited in ascend_ops/simulator/constraints/)."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from ascend_ops.simulator import SimulatedNpuError
from conftest import make_paged_problem

pytestmark = pytest.mark.sim_only  # the simulator's own contract


def _fia_args(dtype=torch.bfloat16, block_size=16, head_dim=16):
    p = make_paged_problem([2, 1], [5, 9], 4, 2, head_dim, block_size, dtype, seed=3)
    nb, bs = p["key_cache"].shape[:2]
    kw = dict(actual_seq_lengths=[2, 3], actual_seq_lengths_kv=[5, 9], block_table=p["block_table"],
              block_size=bs, num_heads=4, num_key_value_heads=2, scale=0.25, input_layout="TND")
    return p["query"], p["key_cache"].reshape(nb, bs, -1), p["value_cache"].reshape(nb, bs, -1), kw


def _fia(m, q, k, v, kw, **change):
    return m.npu_fused_infer_attention_score(q, k, v, **{**kw, **change})


FIA_CASES = [
    ("fp32 query", dict(dtype=torch.float32), {}, "query must be float16/bfloat16, got float32"),
    ("int64 block table", {}, dict(block_table="int64"), "block_table must be int32"),
    ("block size 8", dict(block_size=8), {}, "block_size must be a multiple of 16"),
    ("unknown layout", {}, dict(input_layout="SBH"), "input_layout must be one of"),
    ("num_heads vs query", {}, dict(num_heads=8), "num_heads=8 must equal query's N axis"),
    ("GQA ratio", {}, dict(num_key_value_heads=3), "multiple of num_key_value_heads"),
    ("TND lengths", {}, dict(actual_seq_lengths=[2, 1]), "non-decreasing"),
    ("TND total", {}, dict(actual_seq_lengths=[2, 4]), r"actual_seq_lengths\[-1\] \(4\) must equal T \(3\)"),
    ("no kv lengths", {}, dict(actual_seq_lengths_kv=None), "needs actual_seq_lengths_kv"),
    ("sparse 3 mask", {}, dict(sparse_mode=3), "2048x2048 atten_mask"),
    ("sparse 5", {}, dict(sparse_mode=5), "sparse_mode must be"),
    ("rope alone", {}, dict(query_rope="q"), "query_rope and key_rope must be given together"),
    ("head dim 24 prefill", dict(head_dim=24), {}, "head dim 24 must be a multiple of 16"),
]


@pytest.mark.parametrize("case, make, change, match", FIA_CASES, ids=[c[0] for c in FIA_CASES])
def test_fused_infer_attention_rules(simulated_npu, case, make, change, match):
    q, k, v, kw = _fia_args(**make)
    if change.get("block_table") == "int64":
        change["block_table"] = kw["block_table"].long()
    if change.get("query_rope") == "q":
        change["query_rope"] = q.clone()
    with pytest.raises(SimulatedNpuError, match=f"npu_fused_infer_attention_score: .*{match}"):
        _fia(simulated_npu, q, k, v, kw, **change)


def test_fused_infer_attention_refuses_non_contiguous_query(simulated_npu):
    q, k, v, kw = _fia_args()
    wide = torch.cat([q, q], -1)[..., : q.shape[-1]]
    with pytest.raises(SimulatedNpuError, match="query must be contiguous"):
        _fia(simulated_npu, wide, k, v, kw)


def test_fused_infer_attention_block_table_too_short(simulated_npu):
    q, k, v, kw = _fia_args()
    with pytest.raises(SimulatedNpuError, match="fewer than the 2 blocks"):
        _fia(simulated_npu, q, k, v, kw, actual_seq_lengths_kv=[5, 20])


def test_fp32_model_through_the_public_op_fails_in_simulated_mode(simulated_npu):
    """The op layer routes to the npu branch, and FIA refuses float32 (fp16/bf16 only)."""
    p = make_paged_problem([1], [4], 2, 2, 16, 16, torch.float32)
    args = [p[n] for n in ("query", "key_cache", "value_cache", "block_table", "query_start_loc", "seq_lens")]
    with pytest.raises(SimulatedNpuError, match="query must be float16/bfloat16"):
        ascend_ops.fused_infer_attention(*args, 0.5, True)


def test_reshape_and_cache_rules(simulated_npu):
    m = simulated_npu
    key = torch.randn(2, 2, 8, dtype=torch.float16)
    cache = torch.zeros(2, 16, 2, 8, dtype=torch.float16)
    slots = torch.tensor([0, 17], dtype=torch.int32)
    m._npu_reshape_and_cache(key, key, cache, cache.clone(), slots)  # valid call
    with pytest.raises(SimulatedNpuError, match="_npu_reshape_and_cache: slot_indices must be int32, got int64"):
        m._npu_reshape_and_cache(key, key, cache, cache.clone(), slots.long())
    halves = torch.zeros(2, 16, 2, 16, dtype=torch.float16)
    with pytest.raises(SimulatedNpuError, match="key_cache must be contiguous"):
        m._npu_reshape_and_cache(key, key, halves[..., :8], halves[..., 8:], slots)
    with pytest.raises(SimulatedNpuError, match="value_cache must have key's dtype"):
        m._npu_reshape_and_cache(key, key, cache, cache.clone().bfloat16(), slots)


def test_public_reshape_and_cache_with_split_cache_views_is_refused(simulated_npu):
    """The ATB operator behind the NPU branch cannot take non-contiguous cache views: either the
    branch refuses them itself (ValueError) or the simulated operator does."""
    buf = torch.zeros(3, 16, 2, 16, dtype=torch.bfloat16)
    key = torch.randn(2, 2, 8, dtype=torch.bfloat16)
    with pytest.raises((ValueError, SimulatedNpuError), match="key_cache must be contiguous"):
        ascend_ops.reshape_and_cache(key, key, buf[..., :8], buf[..., 8:], torch.tensor([0, 1]))


def test_rope_and_norm_and_moe_rules(simulated_npu):
    m = simulated_npu
    pos = torch.tensor([0, 1])
    q, k = torch.randn(2, 32), torch.randn(2, 16)
    with pytest.raises(SimulatedNpuError, match="_npu_rotary_embedding: query must be float16/bfloat16"):
        m._npu_rotary_embedding(pos, q, k, 16, torch.randn(4, 16), True)
    with pytest.raises(SimulatedNpuError, match="cos_sin_cache must have query's dtype"):
        # a float32 table is ATB's high-precision mode with float16 query/key, which bf16 lacks
        m._npu_rotary_embedding(pos, q.bfloat16(), k.bfloat16(), 16, torch.randn(4, 16), True)
    with pytest.raises(SimulatedNpuError, match="npu_rms_norm: gamma must have self's dtype"):
        m.npu_rms_norm(torch.randn(2, 8).half(), torch.ones(8))
    with pytest.raises(SimulatedNpuError, match="npu_swiglu: self.shape"):
        m.npu_swiglu(torch.randn(2, 7))
    rows = torch.tensor([[0, 2], [1, 3]], dtype=torch.int32)
    with pytest.MonkeyPatch.context() as mp, \
            pytest.raises(SimulatedNpuError, match="npu_moe_init_routing: expert_idx must be int32"):
        mp.setenv("ASCEND_OPS_SIM_SOC", "A2")  # the v1 operator is documented for Atlas A2 only
        m.npu_moe_init_routing(torch.randn(2, 4), rows, rows.long(), 2)
    with pytest.raises(SimulatedNpuError, match="npu_moe_gating_top_k: group_count must divide"):
        m.npu_moe_gating_top_k(torch.randn(2, 6), 1, group_count=4)
    with pytest.raises(SimulatedNpuError, match="more than 2 experts"):
        m.npu_moe_gating_top_k(torch.randn(2, 8), 1, group_count=4, k_group=2)
    with pytest.raises(SimulatedNpuError, match="npu_grouped_matmul: group_list must be an int64"):
        m.npu_grouped_matmul([torch.randn(2, 3)], [torch.randn(1, 3, 2)],
                             group_list=torch.tensor([2], dtype=torch.int32),
                             split_item=2, group_type=0, group_list_type=1)


def test_unmodelled_mode_is_a_simulated_npu_error(simulated_npu):
    with pytest.raises(SimulatedNpuError, match="not modelled.*group_list_type"):
        simulated_npu.npu_grouped_matmul([torch.randn(2, 3)], [torch.randn(1, 3, 2)], group_list=torch.tensor([2]),
                                         split_item=2, group_type=0, group_list_type=0)
