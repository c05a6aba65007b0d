# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The NPU branch of every op through the simulated torch_npu (operators defined from the
torch-npu 2.13.0 wheel's published schemas, constraints checked), compared with the reference."""

from __future__ import annotations

import re
from pathlib import Path

import ascend_ops
import pytest
import torch
from ascend_ops import reference
from conftest import make_paged_problem
from moe_samples import run_moe_ops

PKG_ROOT = Path(__file__).resolve().parents[1]
OPERATOR_CALL = re.compile(r"torch\.ops\.(?:npu|atb)\.(\w+)|torch_npu(?:\(\))?\.(_?npu_\w+)")
# bf16/fp16 reference vs simulated kernel: both round once to the dtype at the end; rope casts
# cos_sin_cache to the query dtype first (one rounding more).
TOL = {torch.bfloat16: dict(atol=3e-2, rtol=3e-2), torch.float16: dict(atol=3e-3, rtol=3e-3)}


def run_dense_ops(dtype) -> dict:
    """Call every non-MoE op once on the current backend: {case: (got, expected)}."""
    g = torch.Generator().manual_seed(0)
    r = {}
    x = torch.randn(4, 32, generator=g).to(dtype)
    res = torch.randn(4, 32, generator=g).to(dtype)
    w = torch.rand(32, generator=g).to(dtype)
    r["rms_norm"] = (ascend_ops.rms_norm(x, w, 1e-6), reference.rms_norm(x, w, 1e-6))
    r["add_rms_norm"] = (ascend_ops.add_rms_norm(x, res, w, 1e-6), reference.add_rms_norm(x, res, w, 1e-6))
    r["swiglu"] = (ascend_ops.swiglu(x), reference.swiglu(x))
    pos = torch.tensor([3, 0, 7])
    q = torch.randn(3, 4 * 64, generator=g).to(dtype)
    k = torch.randn(3, 2 * 64, generator=g).to(dtype)
    # partial rotary (rotary_dim 32 of head_size 64) within npu_mrope's 32-alignment
    cache = torch.randn(8, 32, generator=g)
    for neox in (True, False):
        r[f"rotary_embedding(neox={neox})"] = (ascend_ops.rotary_embedding(pos, q, k, 64, cache, neox),
                                               reference.rotary_embedding(pos, q, k, 64, cache.to(dtype), neox))
    kc, vc = torch.zeros(3, 16, 2, 8, dtype=dtype), torch.zeros(3, 16, 2, 8, dtype=dtype)
    key, val = torch.randn(3, 2, 8, generator=g).to(dtype), torch.randn(3, 2, 8, generator=g).to(dtype)
    slots = torch.tensor([5, -1, 40])
    ascend_ops.reshape_and_cache(key, val, kc, vc, slots)
    ek, ev = torch.zeros_like(kc), torch.zeros_like(vc)
    reference.reshape_and_cache(key, val, ek, ev, slots)
    r["reshape_and_cache"] = ((kc, vc), (ek, ev))
    p = make_paged_problem([3, 1, 2], [3, 20, 35], 4, 2, 16, 16, dtype, seed=1)
    args = [p[n] for n in ("query", "key_cache", "value_cache", "block_table", "query_start_loc", "seq_lens")]
    for causal in (True, False):
        r[f"fused_infer_attention(causal={causal})"] = (ascend_ops.fused_infer_attention(*args, 0.25, causal),
                                                        reference.fused_infer_attention(*args, 0.25, causal))
    return r


@pytest.mark.sim_only
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_npu_branch_of_every_op_matches_reference(simulated_npu, dtype):
    from ascend_ops import simulator

    ascend_ops.reset_call_counts()
    results = {**run_dense_ops(dtype), **run_moe_ops(dtype)}
    for name, (got, expect) in results.items():
        torch.testing.assert_close(got, expect, **TOL[dtype], msg=lambda m, name=name: f"{name}: {m}")
    counts = ascend_ops.call_counts(per_backend=True)
    assert {op for op, backend in counts if backend != "npu"} == set(), "an op left the npu branch"
    assert {"rms_norm", "add_rms_norm", "swiglu", "rotary_embedding", "reshape_and_cache", "fused_infer_attention",
            "moe_gating_top_k", "moe_init_routing", "moe_finalize_routing",
            "grouped_matmul", "grouped_matmul_swiglu"} <= {op for op, _ in counts}
    launched = set(simulator.ledger().launches)
    assert {"npu_rms_norm", "npu_add_rms_norm", "npu_swiglu", "npu_mrope", "_npu_reshape_and_cache",
            "npu_fused_infer_attention_score", "npu_moe_gating_top_k", "npu_moe_init_routing_v2",
            "npu_moe_token_unpermute", "npu_grouped_matmul"} <= launched


def test_simulated_fia_out_overload_matches_functional(simulated_npu):
    """``.out`` (torch_npu's ``out=[attention_out, softmax_lse]`` spelling) writes the same result."""
    p = make_paged_problem([2, 1], [18, 33], 4, 4, 16, 16, torch.bfloat16, seed=2)
    nb, bs = p["key_cache"].shape[:2]
    kw = dict(actual_seq_lengths=[2, 3], actual_seq_lengths_kv=[18, 33], block_table=p["block_table"],
              block_size=bs, num_heads=4, num_key_value_heads=4, scale=0.25, input_layout="TND",
              softmax_lse_flag=True)
    kc, vc = p["key_cache"].reshape(nb, bs, -1), p["value_cache"].reshape(nb, bs, -1)
    out, lse = simulated_npu.npu_fused_infer_attention_score(p["query"], kc, vc, **kw)
    buf, lse_buf = torch.empty_like(out), torch.empty(3, 4, 1)
    got = simulated_npu.npu_fused_infer_attention_score.out(p["query"], kc, vc, workspace=None,
                                                            out=[buf, lse_buf], **kw)
    assert got[0] is buf and got[1] is lse_buf
    torch.testing.assert_close(buf, out, atol=0, rtol=0)
    torch.testing.assert_close(lse_buf, lse)
    expect = reference.fused_infer_attention(p["query"], p["key_cache"], p["value_cache"], p["block_table"],
                                             p["query_start_loc"], p["seq_lens"], 0.25, False)
    torch.testing.assert_close(out, expect, **TOL[torch.bfloat16])


def test_simulated_fia_mla_adds_rope_scores(simulated_npu):
    """MLA decode as vllm-ascend calls it (BNSD, value = the latent cache, query_rope/key_rope):
    scores = q.k + q_rope.k_rope over the paged caches, checked against a dense float64 loop."""
    g = torch.Generator().manual_seed(4)
    b, n, dl, dr, bs, nb = 2, 4, 512, 64, 16, 5  # FIA's MLA path: latent 512, rope 64
    lens = [20, 7]
    ckv = torch.randn(nb, 1, bs, dl, generator=g).to(torch.bfloat16)   # [nb, KV_N=1, bs, D]
    kpe = torch.randn(nb, 1, bs, dr, generator=g).to(torch.bfloat16)
    table = torch.tensor([[3, 1], [0, 4]], dtype=torch.int32)
    q = torch.randn(b, n, 1, dl, generator=g).to(torch.bfloat16)
    qpe = torch.randn(b, n, 1, dr, generator=g).to(torch.bfloat16)
    out, _ = simulated_npu.npu_fused_infer_attention_score(
        q, ckv, ckv, query_rope=qpe, key_rope=kpe, num_heads=n, num_key_value_heads=1,
        input_layout="BNSD", scale=0.1, block_table=table, block_size=bs, actual_seq_lengths_kv=lens)
    assert out.shape == (b, n, 1, dl) and out.dtype == torch.bfloat16
    for i in range(b):
        ids = table[i].long()
        kv = ckv[ids, 0].reshape(-1, dl)[: lens[i]].double()
        kr = kpe[ids, 0].reshape(-1, dr)[: lens[i]].double()
        for h in range(n):
            s = (kv @ q[i, h, 0].double() + kr @ qpe[i, h, 0].double()) * 0.1
            expect = torch.softmax(s, 0) @ kv
            torch.testing.assert_close(out[i, h, 0].double(), expect, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda m, x, w: m.npu_rms_norm(x, w, eps=1e-6), "eps"),  # unknown kwarg
        (lambda m, x, w: m.npu_rms_norm(x), "gamma"),  # missing required
        (lambda m, x, w: m.npu_rms_norm(x, w, epsilon="small"), "epsilon"),  # wrong type
        (lambda m, x, w: m.npu_swiglu(x, dim=1.5), "dim"),
        (lambda m, x, w: m.npu_moe_gating_top_k(x, 1, k_group="two"), "k_group|argument"),
    ],
)
def test_schema_violations_raise_from_the_dispatcher(simulated_npu, call, match):
    x, w = torch.randn(2, 8), torch.ones(8)
    with pytest.raises((RuntimeError, TypeError), match=match):
        call(simulated_npu, x, w)


def test_unsimulated_operator_is_named(simulated_npu):
    with pytest.raises(AttributeError, match="npu_mla_prolog.*no kernel"):
        simulated_npu.npu_mla_prolog  # noqa: B018  (published, but the simulator has no kernel)
    assert not hasattr(simulated_npu, "npu_does_not_exist")


def _source_files():
    roots = [PKG_ROOT / "src"]
    repo = PKG_ROOT.parents[1]
    if (repo / "packages").is_dir() and (repo / "pyproject.toml").is_file():
        roots += [p / "src" for p in (repo / "packages").iterdir() if p.name != PKG_ROOT.name]
    return [f for root in roots if root.is_dir() for f in root.rglob("*.py") if "simulator" not in f.parts]


def test_every_operator_called_in_source_has_a_simulated_kernel(simulated_npu):
    """Every torch_npu operator our source names must be defined by the simulator (else the
    simulated NPU mode would fail on it at run time)."""
    referenced = {}
    for f in _source_files():
        for m in OPERATOR_CALL.finditer(f.read_text(errors="replace")):
            referenced.setdefault(m.group(1) or m.group(2), set()).add(str(f))
    assert referenced, "no torch_npu operator call found: the grep is broken"
    missing = {op: files for op, files in referenced.items() if not isinstance(
        simulated_npu.__dict__.get(op), type(simulated_npu.npu_rms_norm))}
    assert not missing, f"torch_npu operators without a simulated kernel: {missing}"
