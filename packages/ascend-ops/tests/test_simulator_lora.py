# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""LoRA ops on the NPU branch over the simulated torch_npu (docs/simulated-npu.md):
``npu_batch_gather_matmul_`` within its documented limits on Atlas A2 (the only product it is
documented for), the aten composition outside them and on A3, constraint violations, the
operator refused on A3, and graph replay with changed adapter indices."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from ascend_ops.reference import lora as ref
from conftest import TOL

T, H, R, S = 6, 32, 16, 3


def _problem(dtype, rank=R, out=48, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, H, generator=g).to(dtype)
    a = (torch.randn(S, 1, rank, H, generator=g) * 0.2).to(dtype)
    b = (torch.randn(S, 1, out, rank, generator=g) * 0.2).to(dtype)
    y = torch.randn(T, out + 16, generator=g).to(dtype)
    return x, a, b, y, torch.tensor([0, -1, 2, 1, 1, -1])


def _tol(dtype):
    return dict(atol=TOL[dtype]["atol"] * 10, rtol=TOL[dtype]["rtol"] * 5)


@pytest.fixture(params=["A2", "A3"])
def soc(request, monkeypatch):
    """The simulated product (ascend_ops.simulator.soc); the NPU branch reads it from the SoC name."""
    monkeypatch.setenv("ASCEND_OPS_SIM_SOC", request.param)
    return request.param


@pytest.mark.sim_only
@pytest.mark.parametrize("dtype,rank,fused", [
    (torch.float16, 16, True),    # within the operator's limits: one npu_batch_gather_matmul_
    (torch.bfloat16, 16, False),  # the operator is float16-only: aten composition
    (torch.float16, 8, False),    # rank below 16: aten composition
    (torch.float16, 128, True),   # the operator's largest rank
    (torch.float16, 256, False),  # above it (vLLM accepts up to 512): aten composition
])
def test_lora_linear_npu_branch(simulated_npu, soc, dtype, rank, fused):
    from ascend_ops import simulator

    x, a, b, y, idx = _problem(dtype, rank)
    want = y.double().clone()
    ref.lora_linear(want, x, a, b, idx, 0.5, 16, 48)
    ascend_ops.reset_call_counts()
    ascend_ops.lora_linear(y, x, a, b, idx, 0.5, 16, 48)
    torch.testing.assert_close(y.double(), want, **_tol(dtype))
    assert set(ascend_ops.call_counts(per_backend=True)) == {("lora_linear", "npu")}
    launched = simulator.ledger().launches.get("npu_batch_gather_matmul_", 0)
    assert launched == (1 if fused and soc == "A2" else 0)


@pytest.mark.sim_only
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_shrink_expand_and_segments_npu_branch(simulated_npu, soc, dtype):
    from ascend_ops import simulator

    x, a, b, y, idx = _problem(dtype)
    out = torch.zeros(T, R, dtype=dtype)  # float16 buffer: the operator's weight_a=None form
    ascend_ops.lora_shrink(x, a, idx, 0.5, out)
    want_s = torch.zeros(T, R, dtype=torch.float64)
    ref.lora_shrink(x, a, idx, 0.5, want_s)
    torch.testing.assert_close(out.double(), want_s, **_tol(dtype))
    y_exp, want_e = y.clone(), y.double().clone()
    ascend_ops.lora_expand(out, b, idx, y_exp, 16, 48, add_inputs=True)
    ref.lora_expand(out, b, idx, want_e, 16, 48, True)
    torch.testing.assert_close(y_exp.double(), want_e, **_tol(dtype))
    seg_lens, seg_lora = torch.tensor([2, 3]), torch.tensor([1, -1])
    per_tok = torch.tensor([1, 1, -1, -1, -1, -1])
    s_seg, s_want = torch.zeros(T, R, dtype=torch.float32), torch.zeros(T, R, dtype=torch.float64)
    ascend_ops.sgmv_shrink(x, a, seg_lens, seg_lora, 5, 0.5, s_seg)
    ref.lora_shrink(x, a, per_tok, 0.5, s_want)
    torch.testing.assert_close(s_seg.double(), s_want, **_tol(dtype))
    y_seg, y_want = y.clone(), y.double().clone()
    ascend_ops.sgmv_expand(out, b, seg_lens, seg_lora, 5, y_seg, 0, 48, True)
    ref.lora_expand(out, b, per_tok, y_want, 0, 48, True)
    torch.testing.assert_close(y_seg.double(), y_want, **_tol(dtype))
    ops = {op for op, backend in ascend_ops.call_counts(per_backend=True) if backend == "npu"}
    assert {"lora_shrink", "lora_expand", "sgmv_shrink", "sgmv_expand"} <= ops
    launched = simulator.ledger().launches.get("npu_batch_gather_matmul_", 0)
    if dtype == torch.float16 and soc == "A2":
        assert launched >= 3
    else:
        assert launched == 0


@pytest.mark.sim_only
def test_operator_limits_are_enforced(simulated_npu, monkeypatch):
    import torch_npu
    from ascend_ops.simulator import SimulatedNpuError

    monkeypatch.setenv("ASCEND_OPS_SIM_SOC", "A2")  # the operator's product
    x, a, b, y, idx = _problem(torch.float16)
    with pytest.raises(SimulatedNpuError, match="indices must be int32"):
        torch_npu.npu_batch_gather_matmul_(y, x, b, idx, a, scale=1.0, y_slice_size=48)
    with pytest.raises(SimulatedNpuError, match="R must be a multiple of 16"):
        xs, a8, b8, ys, _ = _problem(torch.float16, rank=8)
        torch_npu.npu_batch_gather_matmul_(ys, xs, b8, idx.int(), a8, scale=1.0, y_slice_size=48)
    with pytest.raises(SimulatedNpuError, match="float16"):
        torch_npu.npu_batch_gather_matmul_(y.float(), x, b, idx.int(), a, y_slice_size=48)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])  # operator / aten composition
def test_graph_replay_follows_new_adapter_indices(simulated_npu, soc, dtype):
    """Indices are device inputs: a captured LoRA product replays with the adapters of now."""
    x, a, b, y0, _ = _problem(dtype)
    idx = torch.tensor([0, -1, 2, 1, 1, -1])
    y = y0.clone()
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        y.copy_(y0)
        ascend_ops.lora_linear(y, x, a, b, idx, 0.5, 16, 48)
    for new in ([2, 2, -1, 0, 1, 0], [-1, -1, -1, -1, -1, -1], [1, 0, 2, 2, 0, 1]):
        idx.copy_(torch.tensor(new))
        g.replay()
        want = y0.double().clone()
        ref.lora_linear(want, x, a, b, idx, 0.5, 16, 48)
        torch.testing.assert_close(y.double(), want, **_tol(dtype))


@pytest.mark.sim_only
def test_operator_is_refused_on_a3(simulated_npu, monkeypatch):
    """npu_batch_gather_matmul(_) is documented for Atlas A2 only (torch-npu 2.13.0
    _op_plugin_docs.py, 支持的型号): the simulated A3 refuses it, naming the SoC and the source."""
    import torch_npu
    from ascend_ops.simulator import SimulatedNpuError

    monkeypatch.setenv("ASCEND_OPS_SIM_SOC", "A3")
    assert torch.npu.get_device_name() == "Ascend910_9391"
    x, a, b, y, idx = _problem(torch.float16)
    for op in (torch_npu.npu_batch_gather_matmul_, torch_npu.npu_batch_gather_matmul):
        with pytest.raises(SimulatedNpuError, match=r"npu_batch_gather_matmul_?: not available on the "
                                                    r"simulated SoC A3 .*_op_plugin_docs\.py"):
            op(y, x, b, idx.int(), a, scale=1.0, y_slice_size=48)
