# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""int8 ops (ascend_ops.quantize / dynamic_quant / quant_matmul) against a float64 oracle written
here from the torch_npu operator docs (npu_quantize div_mode=False: round(x * scales +
zero_points); npu_dynamic_quant: scale = rowMax|x| / 127, y = round(x / scale); npu_quant_matmul:
(x1 @ x2 + bias) * scale * pertoken_scale), on every CPU backend and on the simulated NPU."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st


def _oracle_quantize(x, scales, zp):
    return torch.clamp(torch.round(x.double() * scales.double() + zp.double()), -128, 127)


def _oracle_dynamic(x):
    xd = x.double()
    scale = xd.abs().amax(-1)
    scale = scale / 127.0
    y = torch.where(scale[:, None] > 0, torch.round(xd / scale.clamp_min(1e-300)[:, None]),
                    torch.zeros_like(xd))
    return y.clamp(-128, 127), scale


def _oracle_matmul(x1, x2, scale, pts, bias):
    acc = torch.zeros(x1.shape[0], x2.shape[1], dtype=torch.float64)
    for i in range(x1.shape[1]):  # plain rank-1 sums, exact in float64
        acc += x1[:, i:i + 1].double() * x2[i:i + 1, :].double()
    if bias is not None:
        acc += bias.double()
    out = acc * scale.double()
    return out * pts.double()[:, None] if pts is not None else out


problems = st.tuples(st.integers(1, 9), st.sampled_from([16, 24, 64]), st.sampled_from([8, 32]),
                     st.integers(0, 2**16), st.sampled_from([torch.float16, torch.bfloat16]))


def _inputs(m, k, n, seed, dtype):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(m, k, generator=g) * 3).to(dtype)
    x[0, 0] = 0 if m > 1 else x[0, 0]
    w = torch.randint(-128, 128, (k, n), generator=g, dtype=torch.int8)
    return g, x, w


def _check_all(m, k, n, seed, dtype):
    g, x, w = _inputs(m, k, n, seed, dtype)
    scales = torch.full((1,), 1 / 0.021, dtype=dtype)
    zp = torch.full((1,), 5.0, dtype=dtype)
    xq = ascend_ops.quantize(x, scales, zp)
    assert xq.dtype == torch.int8
    assert torch.equal(xq.double(), _oracle_quantize(x, scales, zp))
    yq, tok = ascend_ops.dynamic_quant(x)
    want_y, want_s = _oracle_dynamic(x)
    assert tok.dtype == torch.float32 and tok.shape == (m,)
    torch.testing.assert_close(tok.double(), want_s, rtol=1e-6, atol=0)
    # float32 scale vs float64: a value exactly at .5 may round the other way
    assert (yq.double() - want_y).abs().max() <= 1
    assert (yq.double() != want_y).float().mean() < 0.02
    scale = torch.rand(n, generator=g) * 1e-3 + 1e-4
    bias = torch.randint(-5000, 5000, (n,), generator=g, dtype=torch.int32)
    for pts, b in ((tok, None), (None, bias)):
        out = ascend_ops.quant_matmul(yq, w, scale, pts, b, dtype)
        assert out.dtype == dtype and out.shape == (m, n)
        want = _oracle_matmul(yq, w, scale, pts, b)
        torch.testing.assert_close(out.double(), want, rtol=1e-2, atol=1e-2 * want.abs().max().item())


@pytest.mark.parametrize("name", ["reference", "native"])
@given(p=problems)
def test_cpu_backends_match_oracle(name, p):
    with ascend_ops.use_backend(name):  # the native int8 path is vectorised torch, no _C needed
        _check_all(*p)


@pytest.mark.sim_only
def test_simulated_npu_matches_oracle(simulated_npu):
    for seed, (m, k, n) in enumerate([(1, 16, 8), (5, 64, 32), (17, 24, 8)]):
        for dtype in (torch.float16, torch.bfloat16):
            _check_all(m, k, n, seed, dtype)
    from ascend_ops import simulator

    launches = simulator.ledger().launches
    assert launches["npu_quantize"] and launches["npu_dynamic_quant"] and launches["npu_quant_matmul"]


@pytest.mark.parametrize("name", ["reference", "native"])
def test_int_accumulation_is_exact(name):
    # K = 4096 full-range int8 rows: sums exceed 2**24, where float32 accumulation would round
    x1 = torch.full((2, 4096), 127, dtype=torch.int8)
    x2 = torch.full((4096, 8), -128, dtype=torch.int8)
    x2[0, 0] = 127
    with ascend_ops.use_backend(name):
        out = ascend_ops.quant_matmul(x1, x2, torch.ones(8), None,
                                      torch.ones(8, dtype=torch.int32), torch.float32)
    exact = 127 * -128 * 4095 + 127 * 127 + 1
    assert float(out[0, 0]) == pytest.approx(exact, rel=1e-7)


@pytest.mark.parametrize("call, match", [
    (lambda: ascend_ops.quant_matmul(torch.zeros(2, 4), torch.zeros(4, 3, dtype=torch.int8),
                                     torch.ones(3)), "x1 must be int8"),
    (lambda: ascend_ops.quant_matmul(torch.zeros(2, 4, dtype=torch.int8),
                                     torch.zeros(3, 4, dtype=torch.int8), torch.ones(3)), "x2 must be"),
    (lambda: ascend_ops.quant_matmul(torch.zeros(2, 4, dtype=torch.int8),
                                     torch.zeros(4, 3, dtype=torch.int8), torch.ones(3),
                                     pertoken_scale=torch.ones(3)), "pertoken_scale must be"),
    (lambda: ascend_ops.quantize(torch.zeros(2, 4), torch.ones(4, dtype=torch.float16)), "scales must"),
    (lambda: ascend_ops.dynamic_quant(torch.zeros(4)), "at least 2-D"),
])
def test_bad_input_names_the_argument(call, match):
    with pytest.raises((TypeError, ValueError), match=match):
        call()


@pytest.mark.sim_only
def test_simulator_refuses_undocumented_combinations(simulated_npu):
    from ascend_ops.simulator import SimulatedNpuError

    x = torch.zeros(2, 16, dtype=torch.int8)
    w = torch.zeros(16, 8, dtype=torch.int8)
    with pytest.raises(SimulatedNpuError, match="npu_quant_matmul: unsupported combination"):
        ascend_ops.quant_matmul(x, w, torch.ones(8), None, None, torch.float32)
    with pytest.raises(SimulatedNpuError, match="npu_dynamic_quant: input must be float16/bfloat16"):
        ascend_ops.dynamic_quant(torch.zeros(2, 16))
    torch_npu = simulated_npu
    with pytest.raises(SimulatedNpuError, match="pertoken_scale must be 1-D of size m=2"):
        torch_npu.npu_quant_matmul(x, w, torch.ones(8), pertoken_scale=torch.ones(3),
                                   output_dtype=torch.bfloat16)
    with pytest.raises(SimulatedNpuError, match="x2 must be int8"):
        torch_npu.npu_quant_matmul(x, w.half(), torch.ones(8), output_dtype=torch.bfloat16)
