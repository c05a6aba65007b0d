# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""MoE ops against hand-worked examples, a naive per-token expert oracle, and the references."""

from __future__ import annotations

import math

import ascend_ops
import pytest
import torch
from ascend_ops.reference import moe as ref
from moe_samples import routing_problem


def test_softmax_top_k_hand_example(backend):
    logits = torch.tensor([[0.0, 1.0, 3.0, 2.0]])
    w, ids = ascend_ops.moe_gating_top_k(logits, 2)
    denom = 1 + math.e + math.e**3 + math.e**2
    assert ids.tolist() == [[2, 3]] and ids.dtype == torch.int32
    torch.testing.assert_close(w, torch.tensor([[math.e**3 / denom, math.e**2 / denom]]))
    w, _ = ascend_ops.moe_gating_top_k(logits, 2, renormalize=True, routed_scaling_factor=2.0)
    torch.testing.assert_close(w, 2.0 * torch.tensor([[math.e / (math.e + 1), 1 / (math.e + 1)]]))


def test_grouped_top_k_max_group_score(backend):
    # groups {0,1} and {2,3}: group max 5 beats 4, so only experts 0 and 1 can be chosen
    logits = torch.tensor([[5.0, 0.0, 4.0, 4.0]])
    _, ids = ascend_ops.moe_gating_top_k(logits, 2, num_expert_group=2, topk_group=1)
    assert ids.tolist() == [[0, 1]]
    _, ids = ascend_ops.moe_gating_top_k(logits, 2)
    assert ids[0, 0].item() == 0 and ids[0, 1].item() in (2, 3)


def test_grouped_top_k_sigmoid_bias_top2_sum(backend):
    # sigmoid scores; group score = sum of the two best biased scores: {2,3} (2*s(3)) beats {0,1} (1.0)
    logits = torch.tensor([[5.0, -5.0, 3.0, 2.9]])
    bias = torch.tensor([0.0, 0.0, 0.0, 0.5])
    w, ids = ascend_ops.moe_gating_top_k(
        logits, 2, scoring="sigmoid", num_expert_group=2, topk_group=1, bias=bias
    )
    assert ids.tolist() == [[3, 2]]  # expert 3 wins on its biased score
    torch.testing.assert_close(w, torch.sigmoid(torch.tensor([[2.9, 3.0]])))  # weights exclude bias


def test_init_routing_hand_example(backend):
    x = torch.arange(3.0).repeat_interleave(2).view(3, 2)  # token t's row is [t, t]
    ids = torch.tensor([[1, 0], [0, 2], [1, 2]], dtype=torch.int32)
    ex, row_idx, ex_ids = ascend_ops.moe_init_routing(x, ids)
    assert ex[:, 0].tolist() == [0, 1, 0, 2, 1, 2]  # expert 0: t0, t1; expert 1: t0, t2; expert 2: t1, t2
    assert ex_ids.tolist() == [0, 0, 1, 1, 2, 2]
    # slot-major source index j*T+t -> destination row
    assert row_idx.tolist() == [2, 1, 3, 0, 4, 5]


def test_finalize_routing_hand_example(backend):
    rows = torch.tensor([[1.0], [10.0], [100.0], [1000.0]])  # 2 tokens, k=2
    row_idx = torch.tensor([3, 0, 1, 2], dtype=torch.int32)  # (t0,j0)->3 (t1,j0)->0 (t0,j1)->1 (t1,j1)->2
    ids = torch.tensor([[0, 1], [1, 0]], dtype=torch.int32)
    scales = torch.tensor([[0.5, 0.25], [2.0, 1.0]])
    skip = torch.tensor([[7.0], [8.0]])
    bias = torch.tensor([[0.0], [3.0]])
    out = ascend_ops.moe_finalize_routing(rows, scales, row_idx, ids, skip=skip, bias=bias)
    t0 = 7 + 0.5 * 1000 + 0.25 * (10 + 3)
    t1 = 8 + 2.0 * (1 + 3) + 1.0 * 100
    torch.testing.assert_close(out, torch.tensor([[t0], [t1]]))


def _naive_moe(x, ids, scales, w13, w2):
    """Per token, per chosen expert: silu(x W_gate) * (x W_up) W_down, weighted and summed (float64)."""
    inter = w2.shape[1]
    out = torch.zeros(x.shape, dtype=torch.float64)
    for t in range(x.shape[0]):
        for j in range(ids.shape[1]):
            e = int(ids[t, j])
            h = x[t].double() @ w13[e].double()
            act = torch.nn.functional.silu(h[:inter]) * h[inter:]
            out[t] += scales[t, j].double() * (act @ w2[e].double())
    return out


def test_full_moe_pipeline_matches_naive_expert_loop(backend):
    p = routing_problem(tokens=7, experts=5, top_k=3)
    ex, row_idx, ex_ids = ascend_ops.moe_init_routing(p["x"], p["ids"])
    counts = torch.bincount(ex_ids.long(), minlength=p["experts"])
    h = ascend_ops.grouped_matmul(ex, p["w13"], counts)
    y = ascend_ops.grouped_matmul(ascend_ops.swiglu(h), p["w2"], counts)
    out = ascend_ops.moe_finalize_routing(y, p["scales"], row_idx, p["ids"])
    torch.testing.assert_close(out.double(), _naive_moe(**{k: p[k] for k in ("x", "ids", "scales", "w13", "w2")}),
                               atol=1e-5, rtol=1e-5)


GATING_CASES = [
    dict(scoring="softmax"),
    dict(scoring="softmax", renormalize=True),
    dict(scoring="sigmoid", renormalize=True, routed_scaling_factor=2.5),
    dict(scoring="softmax", num_expert_group=4, topk_group=2),  # DeepSeek-V2 group-limited greedy
    dict(scoring="sigmoid", num_expert_group=4, topk_group=2, renormalize=True, bias=True),  # V3 noaux_tc
]


@pytest.mark.parametrize("case", GATING_CASES, ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gating_matches_reference(backend, case, dtype):
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(9, 16, generator=g).to(dtype)
    kw = dict(case)
    if kw.pop("bias", False):
        kw["bias"] = torch.randn(16, generator=g) * 0.1
    w, ids = ascend_ops.moe_gating_top_k(logits, 4, **kw)
    rw, rids = ref.moe_gating_top_k(logits, 4, **{"scoring": "softmax", **kw})
    assert torch.equal(ids, rids)
    torch.testing.assert_close(w, rw)
    assert w.dtype == torch.float32


@pytest.mark.parametrize("tokens,experts,top_k", [(1, 4, 1), (6, 8, 2), (13, 5, 5), (0, 3, 2)])
def test_routing_and_gmm_match_reference(backend, tokens, experts, top_k):
    p = routing_problem(tokens=tokens, experts=experts, top_k=top_k, seed=tokens)
    got = ascend_ops.moe_init_routing(p["x"], p["ids"])
    want = ref.moe_init_routing(p["x"], p["ids"])
    for a, b in zip(got, want, strict=True):
        assert torch.equal(a, b)
    counts = torch.bincount(got[2].long(), minlength=experts)
    h = ascend_ops.grouped_matmul(got[0], p["w13"], counts)
    torch.testing.assert_close(h, ref.grouped_matmul(got[0], p["w13"], counts))
    y = torch.randn(tokens * top_k, 8)
    torch.testing.assert_close(
        ascend_ops.moe_finalize_routing(y, p["scales"], got[1], p["ids"]),
        ref.moe_finalize_routing(y, p["scales"], got[1], p["ids"]),
    )


@pytest.mark.parametrize("tokens,experts,top_k", [(1, 4, 1), (6, 8, 2), (0, 3, 2)])
def test_grouped_matmul_swiglu_is_swiglu_of_grouped_matmul(backend, tokens, experts, top_k):
    p = routing_problem(tokens=tokens, experts=experts, top_k=top_k, seed=tokens)
    ex, _, ex_ids = ascend_ops.moe_init_routing(p["x"], p["ids"])
    counts = torch.bincount(ex_ids.long(), minlength=experts)
    got = ascend_ops.grouped_matmul_swiglu(ex, p["w13"], counts)
    assert got.shape == (tokens * top_k, p["w13"].shape[2] // 2)
    torch.testing.assert_close(got, ref.grouped_matmul_swiglu(ex, p["w13"], counts))
    torch.testing.assert_close(got, ascend_ops.swiglu(ascend_ops.grouped_matmul(ex, p["w13"], counts)))


def test_grouped_matmul_swiglu_passes_opcheck():
    from moe_samples import opcheck_samples

    with ascend_ops.use_backend("reference"):
        torch.library.opcheck(torch.ops.ascend.grouped_matmul_swiglu,
                              opcheck_samples()["grouped_matmul_swiglu"],
                              test_utils=("test_schema", "test_faketensor"))


def test_moe_ops_count_their_backend(backend):
    ascend_ops.reset_call_counts()
    ascend_ops.moe_gating_top_k(torch.randn(2, 4), 1)
    assert ascend_ops.call_counts(per_backend=True)[("moe_gating_top_k", backend)] == 1


def test_native_routing_runs_the_cpp_kernels_and_refuses_negative_ids(monkeypatch):
    """The native backend's gating (no groups, no bias), init routing and finalize routing are
    single ``_C`` calls (csrc/moe_routing.cpp); a negative expert id is refused by name."""
    from ascend_ops._dispatch import native_module

    if not ascend_ops.native_available():
        pytest.skip("ascend_ops._C not built")
    mod, seen = native_module(), []
    for name in ("moe_gating_top_k", "moe_init_routing", "moe_finalize_routing"):
        real = getattr(mod, name)
        monkeypatch.setattr(mod, name, lambda *a, _r=real, _n=name: (seen.append(_n), _r(*a))[1])
    g = torch.Generator().manual_seed(5)
    x, logits = torch.randn(6, 8, generator=g), torch.randn(6, 10, generator=g)
    with ascend_ops.use_backend("native"):
        w, ids = ascend_ops.moe_gating_top_k(logits, 3, renormalize=True)
        ex, row_idx, sorted_ids = ascend_ops.moe_init_routing(x, ids.long())
        out = ascend_ops.moe_finalize_routing(ex, w, row_idx, ids)
        with pytest.raises(ValueError, match="expert ids must be >= 0"):
            ascend_ops.moe_init_routing(x, -ids - 1)
    assert seen[:3] == ["moe_gating_top_k", "moe_init_routing", "moe_finalize_routing"]
    rw, rids = ref.moe_gating_top_k(logits, 3, renormalize=True)
    assert torch.equal(ids, rids)
    for got, want in zip((ex, row_idx, sorted_ids), ref.moe_init_routing(x, ids.long()), strict=True):
        assert torch.equal(got, want)
    torch.testing.assert_close(out, ref.moe_finalize_routing(ex, rw, row_idx, ids))
