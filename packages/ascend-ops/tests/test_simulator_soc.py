# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The simulated SoC (``ascend_ops.simulator.soc``, ``ASCEND_OPS_SIM_SOC``): per-product operator
availability, the device name, the MoE operators every product has (``npu_moe_init_routing_v2``,
``npu_moe_token_unpermute``) against the op-plugin documents' formulas, and the MoE NPU branch on
A2 and A3."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from ascend_ops.reference import moe as ref
from conftest import TOL
from moe_samples import run_moe_ops


@pytest.fixture(params=["A2", "A3"])
def soc(request, monkeypatch):
    monkeypatch.setenv("ASCEND_OPS_SIM_SOC", request.param)
    return request.param


def test_default_is_a3_and_names_follow_the_soc(monkeypatch):
    from ascend_ops.simulator import soc as sim_soc

    monkeypatch.delenv("ASCEND_OPS_SIM_SOC", raising=False)
    assert sim_soc.current() == "A3"
    # aclrtGetSocName names (Ascend/pytorch NpuVariables.cpp) and SocVersion values (NpuVariables.h)
    assert [(sim_soc.device_name(s), sim_soc.soc_version(s)) for s in ("A2", "A3", "310P")] == [
        ("Ascend910B2", 221), ("Ascend910_9391", 250), ("Ascend310P3", 202)]
    monkeypatch.setenv("ASCEND_OPS_SIM_SOC", "a5")
    with pytest.raises(ValueError, match="ASCEND_OPS_SIM_SOC='A5'"):
        sim_soc.current()


def test_every_availability_entry_cites_a_document():
    from ascend_ops.simulator import soc as sim_soc

    for op, (families, source) in sim_soc.AVAILABLE.items():
        assert families <= set(sim_soc.FAMILIES), op
        assert "_op_plugin_docs.py" in source or "op-plugin@" in source or "vllm-ascend@" in source, op


def test_v1_moe_operators_are_refused_on_a3(simulated_npu, monkeypatch):
    """npu_moe_init_routing / npu_moe_finalize_routing are documented for Atlas A2 only."""
    from ascend_ops.simulator import SimulatedNpuError

    m = simulated_npu
    x, ids = torch.randn(3, 16).half(), torch.tensor([[0, 1], [1, 2], [2, 0]], dtype=torch.int32)
    rows = torch.arange(6, dtype=torch.int32).view(2, 3).t().contiguous()
    monkeypatch.setenv("ASCEND_OPS_SIM_SOC", "A3")
    with pytest.raises(SimulatedNpuError, match=r"npu_moe_init_routing: not available on the simulated SoC A3 "
                                                r"\(Ascend910_9391.*documented for A2 only.*_op_plugin_docs\.py"):
        m.npu_moe_init_routing(x, rows, ids, 3)
    with pytest.raises(SimulatedNpuError, match="npu_moe_finalize_routing: not available on the simulated SoC A3"):
        m.npu_moe_finalize_routing(torch.randn(6, 16).half(), None, None, None, torch.rand(3, 2).half(),
                                   rows.view(-1), ids, 0)
    monkeypatch.setenv("ASCEND_OPS_SIM_SOC", "A2")
    expanded_x, _, _ = m.npu_moe_init_routing(x, rows, ids, 3)
    assert expanded_x.shape == (6, 16)


def test_init_routing_v2_follows_the_documented_formulas(simulated_npu):
    """Ascend/op-plugin docs torch_npu-npu_moe_init_routing_v2.md: keyValueSort of the token-major
    ids; row_idx_type 1 = the sort's row order, 0 = its inverse; counts = per-expert histogram of
    [start, end); ids out of the range sort last and get -1 in the gather index."""
    m = simulated_npu
    ids = torch.tensor([[3, 1], [0, 3], [5, 1], [1, 2]], dtype=torch.int32)
    x = torch.arange(4, dtype=torch.float16).unsqueeze(1).expand(4, 16).contiguous()
    order = torch.sort(ids.reshape(-1).long(), stable=True).indices  # pair p = t*K + j
    ex, scatter, counts, _ = m.npu_moe_init_routing_v2(x, ids, active_num=8, expert_num=6, expert_tokens_num_type=1,
                                                       expert_tokens_num_flag=True, active_expert_range=[0, 6],
                                                       row_idx_type=1)
    assert scatter.tolist() == order.tolist()
    assert ex[:, 0].tolist() == (order // 2).tolist()
    assert counts.tolist() == [1, 3, 1, 2, 0, 1] and counts.dtype == torch.int64
    _, gather, _, _ = m.npu_moe_init_routing_v2(x, ids, active_num=8, expert_num=6, expert_tokens_num_type=1,
                                                expert_tokens_num_flag=True, active_expert_range=[0, 6])
    assert gather[order].tolist() == list(range(8))
    # EP-style range [1, 4): ids 0 and 5 are out (no row), counts cover experts 1..3
    ex, gather, counts, _ = m.npu_moe_init_routing_v2(x, ids, active_num=8, expert_num=6, expert_tokens_num_type=0,
                                                      expert_tokens_num_flag=True, active_expert_range=[1, 4])
    assert counts.tolist() == [3, 4, 6]  # cumsum mode
    assert gather.tolist() == [4, 0, -1, 5, -1, 1, 2, 3]
    assert ex[:6, 0].tolist() == [0, 2, 3, 3, 0, 1]


def test_token_unpermute_undoes_init_routing_v2(simulated_npu):
    """op-plugin test_npu_moe_token_permute_and_unpermute.py: the operator gathers row
    sorted_indices[t*K + j] for token t's j-th choice and sums them weighted by probs, so with
    init routing v2's gather index every token gets back sum_j probs[t, j] * x[t]."""
    m = simulated_npu
    g = torch.Generator().manual_seed(0)
    x = torch.randn(5, 16, generator=g).half()
    ids = torch.stack([torch.randperm(6, generator=g)[:3] for _ in range(5)]).int()
    probs = torch.rand(5, 3, generator=g).half()
    ex, gather, _, _ = m.npu_moe_init_routing_v2(x, ids, active_num=15, expert_num=6, expert_tokens_num_type=1,
                                                 expert_tokens_num_flag=True, active_expert_range=[0, 6])
    out = m.npu_moe_token_unpermute(ex, gather, probs=probs)
    torch.testing.assert_close(out.float(), x.float() * probs.float().sum(1, keepdim=True), atol=1e-2, rtol=1e-2)


def test_v2_and_unpermute_rules(simulated_npu):
    from ascend_ops.simulator import SimulatedNpuError

    m = simulated_npu
    x, ids = torch.randn(2, 16).half(), torch.tensor([[0, 1], [1, 2]], dtype=torch.int32)
    with pytest.raises(SimulatedNpuError, match="npu_moe_init_routing_v2: expert_idx must be int32"):
        m.npu_moe_init_routing_v2(x, ids.long(), expert_num=3, active_expert_range=[0, 3])
    with pytest.raises(SimulatedNpuError, match="expert ids must be < expert_num"):
        m.npu_moe_init_routing_v2(x, ids, expert_num=2, active_expert_range=[0, 2])
    with pytest.raises(SimulatedNpuError, match="drop_pad_mode must be 0"):
        m.npu_moe_init_routing_v2(x, ids, expert_num=3, drop_pad_mode=1, active_expert_range=[0, 3])
    with pytest.raises(SimulatedNpuError, match="active_expert_range"):
        m.npu_moe_init_routing_v2(x, ids, expert_num=3, active_expert_range=[0, 4])
    with pytest.raises(SimulatedNpuError, match="npu_moe_token_unpermute: padded_mode must be False"):
        m.npu_moe_token_unpermute(torch.randn(4, 16).half(), torch.arange(4), padded_mode=True)
    with pytest.raises(SimulatedNpuError, match="sorted_indices must index"):
        m.npu_moe_token_unpermute(torch.randn(4, 16).half(), torch.tensor([0, -1, 2, 3]))
    with pytest.raises(SimulatedNpuError, match="probs must be"):
        m.npu_moe_token_unpermute(torch.randn(4, 16).half(), torch.arange(4), probs=torch.rand(3, 2).half())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_moe_npu_branch_on_a2_and_a3(simulated_npu, soc, dtype):
    """Routing, grouped matmuls and finalize (with skip and per-expert bias) on the NPU branch
    equal the reference on both products, through the operators both products have."""
    from ascend_ops import simulator

    ascend_ops.reset_call_counts()
    for name, (got, expect) in run_moe_ops(dtype).items():
        torch.testing.assert_close(got, expect, **TOL[dtype], msg=lambda msg, name=name: f"{name}: {msg}")
    assert {b for _, b in ascend_ops.call_counts(per_backend=True)} == {"npu"}
    launched = set(simulator.ledger().launches)
    assert {"npu_moe_init_routing_v2", "npu_moe_token_unpermute"} <= launched
    assert not {"npu_moe_init_routing", "npu_moe_finalize_routing"} & launched


def test_init_routing_passes_the_expert_count(simulated_npu, soc):
    """``num_experts`` is the operator's expert_num: ids past it are refused by the operator."""
    from ascend_ops.simulator import SimulatedNpuError

    x, ids = torch.randn(3, 16).half(), torch.tensor([[0, 4], [1, 2], [3, 0]], dtype=torch.int32)
    got = ascend_ops.moe_init_routing(x, ids, num_experts=5)
    for a, b in zip(got, ref.moe_init_routing(x, ids), strict=True):
        torch.testing.assert_close(a, b)
    with pytest.raises(SimulatedNpuError, match="expert ids must be < expert_num"):
        ascend_ops.moe_init_routing(x, ids, num_experts=4)
