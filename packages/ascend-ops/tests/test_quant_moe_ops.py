# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""ascend_ops.grouped_quant_matmul (MoE experts, W8A8_DYNAMIC) against an oracle written here from
the torch_npu ``npu_grouped_matmul`` docs (per-token quantization, formula 3: for the rows of
group e, ``y = (x @ weight_e) * scale_e * per_token_scale``; group_list_type=1: row counts), on
both CPU backends and on the simulated NPU, plus the documented dtype rules the simulator
enforces."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st


def _oracle(x, w, scale, pts, counts):
    out = torch.zeros(x.shape[0], w.shape[2], dtype=torch.float64)
    row = 0
    for e, c in enumerate(counts):
        for r in range(row, row + c):
            for j in range(w.shape[2]):  # plain integer dot products
                acc = int((x[r].long() * w[e, :, j].long()).sum())
                out[r, j] = acc * float(scale[e, j]) * float(pts[r])
        row += c
    return out


def _problem(seed, e, k, n, counts, transposed):
    g = torch.Generator().manual_seed(seed)
    m = sum(counts)
    x = torch.randint(-128, 128, (m, k), generator=g, dtype=torch.int8)
    if transposed:  # vLLM's [E, N, K] expert layout viewed as [E, K, N]
        w = torch.randint(-128, 128, (e, n, k), generator=g, dtype=torch.int8).transpose(1, 2)
    else:
        w = torch.randint(-128, 128, (e, k, n), generator=g, dtype=torch.int8)
    scale = torch.rand(e, n, generator=g) * 1e-3 + 1e-4
    pts = torch.rand(m, generator=g) * 0.05
    return x, w, scale, pts, torch.tensor(counts, dtype=torch.int64)


def _check(x, w, scale, pts, gl, dtype):
    out = ascend_ops.grouped_quant_matmul(x, w, scale, pts, gl, dtype)
    assert out.dtype == dtype and out.shape == (x.shape[0], w.shape[2])
    want = _oracle(x, w, scale, pts, gl.tolist())
    tol = {torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}[dtype]
    torch.testing.assert_close(out.double(), want, rtol=tol, atol=tol * want.abs().max().item())


problems = st.tuples(st.integers(0, 2**16), st.sampled_from([16, 48]), st.sampled_from([8, 24]),
                     st.lists(st.integers(0, 5), min_size=3, max_size=3).filter(any), st.booleans(),
                     st.sampled_from([torch.float32, torch.bfloat16]))


@pytest.mark.parametrize("name", ["reference", "native"])
@settings(max_examples=25, deadline=None)
@given(p=problems)
def test_cpu_backends_match_oracle(name, p):
    seed, k, n, counts, transposed, dtype = p
    with ascend_ops.use_backend(name):
        _check(*_problem(seed, 3, k, n, counts, transposed), dtype)


@pytest.mark.parametrize("name", ["reference", "native"])
def test_int_accumulation_is_exact(name):
    # K = 4096 full-range rows: the sum exceeds 2**24, where float32 accumulation would round
    x = torch.full((2, 4096), 127, dtype=torch.int8)
    w = torch.full((2, 4096, 4), -128, dtype=torch.int8)
    w[1, 0, 0] = 127
    with ascend_ops.use_backend(name):
        out = ascend_ops.grouped_quant_matmul(x, w, torch.ones(2, 4), torch.ones(2),
                                              torch.tensor([1, 1]), torch.float32)
    assert float(out[1, 0]) == pytest.approx(127 * -128 * 4095 + 127 * 127, rel=1e-7)


@pytest.mark.sim_only
def test_simulated_npu_matches_oracle(simulated_npu):
    for seed, counts in enumerate([[2, 0, 3], [1, 4, 1]]):
        for dtype in (torch.float16, torch.bfloat16):
            _check(*_problem(seed, 3, 32, 16, counts, transposed=True), dtype)
    from ascend_ops import simulator

    assert simulator.ledger().launches["npu_grouped_matmul"]


@pytest.mark.sim_only
def test_simulator_refuses_undocumented_combinations(simulated_npu):
    from ascend_ops.simulator import SimulatedNpuError

    x, w, scale, pts, gl = _problem(0, 3, 16, 8, [1, 1, 2], False)
    with pytest.raises(SimulatedNpuError, match="npu_grouped_matmul: unsupported quantized combination"):
        ascend_ops.grouped_quant_matmul(x, w, scale, pts, gl, torch.float32)
    torch_npu = simulated_npu
    kw = dict(group_list=gl, split_item=2, group_type=0, group_list_type=1)
    with pytest.raises(SimulatedNpuError, match="unsupported quantized combination"):
        # per-token rows: a float32 scale goes with float16 output, not bfloat16
        torch_npu.npu_grouped_matmul([x], [w], scale=[scale], per_token_scale=[pts],
                                     output_dtype=torch.bfloat16, **kw)
    with pytest.raises(SimulatedNpuError, match="per_token_scale must be one float32"):
        torch_npu.npu_grouped_matmul([x], [w], scale=[scale], per_token_scale=[pts[:2]],
                                     output_dtype=torch.float16, **kw)
    with pytest.raises(SimulatedNpuError, match="group_list must cover"):
        torch_npu.npu_grouped_matmul([x], [w], scale=[scale], per_token_scale=[pts],
                                     output_dtype=torch.float16,
                                     **{**kw, "group_list": torch.tensor([1, 1, 1])})


@pytest.mark.parametrize("args, match", [
    (lambda x, w, s, p, g: (x.float(), w, s, p, g), "x must be int8"),
    (lambda x, w, s, p, g: (x, w[:, :8], s, p, g), "weight must be"),
    (lambda x, w, s, p, g: (x, w, s[0], p, g), "scale must be"),
    (lambda x, w, s, p, g: (x, w, s, p[:1], g), "pertoken_scale must be"),
    (lambda x, w, s, p, g: (x, w, s, p, g[:2]), "group_list needs one row count per expert"),
])
def test_bad_input_names_the_argument(args, match):
    with pytest.raises((TypeError, ValueError), match=match):
        ascend_ops.grouped_quant_matmul(*args(*_problem(0, 3, 16, 8, [1, 1, 2], False)),
                                        torch.float16)
