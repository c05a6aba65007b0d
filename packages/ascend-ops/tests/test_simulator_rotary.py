# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Rotary embedding on the simulated NPU: our NPU branch (``torch_npu.npu_mrope``) against the
reference, and the simulated operators' sourced semantics (ATB ``_npu_rotary_embedding``: head
width = table width, first table of the process kept; ``npu_mrope``: partial rotary passes the
tail through, documented rules). Sources are cited in ascend_ops/simulator/kernels_rope.py and
constraints/rope.py."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from ascend_ops import reference, simulator
from ascend_ops.simulator import SimulatedNpuError

TOL = {torch.bfloat16: dict(atol=3e-2, rtol=3e-2), torch.float16: dict(atol=3e-3, rtol=3e-3),
       torch.float32: dict(atol=1e-5, rtol=1e-5)}
MAX_POS = 32


def cos_sin_cache(rotary_dim: int, theta: float) -> torch.Tensor:
    """vLLM's RotaryEmbedding cache: row p = cat(cos(p * f), sin(p * f)), f = theta^(-2i/rotary_dim)."""
    inv_freq = 1.0 / theta ** (torch.arange(0, rotary_dim, 2, dtype=torch.float32) / rotary_dim)
    freqs = torch.arange(MAX_POS, dtype=torch.float32)[:, None] * inv_freq[None, :]
    return torch.cat((freqs.cos(), freqs.sin()), dim=-1)


def qk(head_size: int, dtype, seed: int, tokens: int = 5, hq: int = 4, hk: int = 2):
    g = torch.Generator().manual_seed(seed)
    pos = torch.randint(0, MAX_POS, (tokens,), generator=g)
    q = torch.randn(tokens, hq * head_size, generator=g).to(dtype)
    k = torch.randn(tokens, hk * head_size, generator=g).to(dtype)
    return pos, q, k


# (head_size, rotary_dim, dtype, npu_mrope launches): GLM-4 / Phi-style partial rotary
# (partial_rotary_factor 0.5), a head_size off npu_mrope's 32-alignment (rotary slice), a
# rotary_dim off it (aten math), full rotary in float32 (npu_mrope's 16-alignment).
PARTIAL = [
    (128, 64, torch.bfloat16, 1),
    (64, 32, torch.float16, 1),
    (80, 32, torch.bfloat16, 1),
    (64, 16, torch.bfloat16, 0),
    (48, 48, torch.float32, 1),
]


@pytest.mark.sim_only
@pytest.mark.parametrize("is_neox", [True, False])
@pytest.mark.parametrize("head_size,rotary_dim,dtype,launches", PARTIAL)
def test_npu_branch_partial_rotary_matches_reference(simulated_npu, head_size, rotary_dim, dtype, launches,
                                                     is_neox):
    """The pass-through dims stay as they are and the rotary dims rotate per head (the ATB rope
    our NPU branch used to call rotated rotary_dim-wide chunks across the whole row, or refused
    GPT-J with 'Wrong rotaryCoeff')."""
    pos, q, k = qk(head_size, dtype, seed=head_size + rotary_dim)
    cache = cos_sin_cache(rotary_dim, 10000.0)
    got_q, got_k = ascend_ops.rotary_embedding(pos, q, k, head_size, cache, is_neox)
    want_q, want_k = reference.rotary_embedding(pos, q, k, head_size, cache.to(dtype), is_neox)
    torch.testing.assert_close(got_q, want_q, **TOL[dtype])
    torch.testing.assert_close(got_k, want_k, **TOL[dtype])
    tail = q.view(5, 4, head_size)[..., rotary_dim:]
    assert torch.equal(got_q.view(5, 4, head_size)[..., rotary_dim:], tail)
    assert ascend_ops.call_counts(per_backend=True).get(("rotary_embedding", "npu"), 0) >= 1
    launched = simulator.ledger().launches
    assert launched.get("npu_mrope", 0) == launches and launched.get("_npu_rotary_embedding", 0) == 0


def test_npu_branch_two_tables_in_one_process(simulated_npu):
    """Two rope layers with different theta (a draft model, per-layer theta) each rotate with
    their own table, in either order (ATB rope kept the first table of the process)."""
    pos, q, k = qk(64, torch.bfloat16, seed=7)
    tables = [cos_sin_cache(64, 10000.0), cos_sin_cache(64, 1000000.0)]
    for cache in (*tables, tables[0]):
        got = ascend_ops.rotary_embedding(pos, q, k, 64, cache, True)
        want = reference.rotary_embedding(pos, q, k, 64, cache.to(q.dtype), True)
        torch.testing.assert_close(got, want, **TOL[torch.bfloat16])


# ---- ATB _npu_rotary_embedding as op-plugin RopeAtb.cpp runs it ------------------------------


def test_atb_rope_head_width_is_the_table_width(simulated_npu):
    """rotary_dim 64 of head_size 128: ATB rotates every 64-wide chunk (the tail too)."""
    pos, q, k = qk(128, torch.bfloat16, seed=1)
    cache = cos_sin_cache(64, 10000.0).to(torch.bfloat16)
    q_atb, k_atb = q.clone(), k.clone()
    simulated_npu._npu_rotary_embedding(pos, q_atb, k_atb, 128, cache, True)
    as_heads_of_64 = reference.rotary_embedding(pos, q, k, 64, cache, True)
    torch.testing.assert_close((q_atb, k_atb), as_heads_of_64, **TOL[torch.bfloat16])
    textbook_q, _ = reference.rotary_embedding(pos, q, k, 128, cache, True)
    assert not torch.allclose(q_atb.float(), textbook_q.float(), **TOL[torch.bfloat16])


@pytest.mark.sim_only
def test_atb_rope_gptj_partial_is_a_wrong_rotary_coeff(simulated_npu):
    """GPT-J style passes head_size as rotaryCoeff; ATB accepts only 2, 4 or the table width
    (GLM-4 on A2: 'RopeOperation_0 Wrong rotaryCoeff: 128')."""
    pos, q, k = qk(128, torch.bfloat16, seed=2)
    with pytest.raises(SimulatedNpuError, match="Wrong rotaryCoeff: 128"):
        simulated_npu._npu_rotary_embedding(pos, q, k, 128, cos_sin_cache(64, 1e4).to(q.dtype), False)


@pytest.mark.parametrize("is_neox", [True, False])
def test_atb_rope_rotary_slice_as_vllm_ascend_calls_it(simulated_npu, is_neox):
    """vllm-ascend's partial-rotary ATB call (93754d8061, head_size = rotary_dim since
    4230bc8646): rotate the contiguous rotary slice, concatenate the tail = the reference."""
    pos, q, k = qk(128, torch.float16, seed=3)
    cache = cos_sin_cache(64, 10000.0).half()
    q_rot = q.view(5, 4, 128)[..., :64].contiguous().view(5, -1)
    k_rot = k.view(5, 2, 128)[..., :64].contiguous().view(5, -1)
    simulated_npu._npu_rotary_embedding(pos, q_rot, k_rot, 64, cache, is_neox)
    got_q = torch.cat((q_rot.view(5, 4, 64), q.view(5, 4, 128)[..., 64:]), -1).view(5, -1)
    got_k = torch.cat((k_rot.view(5, 2, 64), k.view(5, 2, 128)[..., 64:]), -1).view(5, -1)
    torch.testing.assert_close((got_q, got_k), reference.rotary_embedding(pos, q, k, 128, cache, is_neox),
                               **TOL[torch.float16])


@pytest.mark.sim_only
def test_atb_rope_keeps_the_first_table_until_reinstall(simulated_npu):
    pos, q, k = qk(64, torch.bfloat16, seed=4)
    first, second = (cos_sin_cache(64, t).to(torch.bfloat16) for t in (10000.0, 1000000.0))
    q1, k1 = q.clone(), k.clone()
    simulated_npu._npu_rotary_embedding(pos, q1, k1, 64, first, True)
    q2, k2 = q.clone(), k.clone()
    simulated_npu._npu_rotary_embedding(pos, q2, k2, 64, second, True)
    assert torch.equal(q2, q1) and torch.equal(k2, k1)  # the second table was ignored
    simulator.uninstall()
    m = simulator.install()  # a fresh simulated process
    q3, k3 = q.clone(), k.clone()
    m._npu_rotary_embedding(pos, q3, k3, 64, second, True)
    torch.testing.assert_close((q3, k3), reference.rotary_embedding(pos, q, k, 64, second, True),
                               **TOL[torch.bfloat16])


@pytest.mark.sim_only
def test_atb_rope_cached_table_dtype_must_match(simulated_npu):
    pos, q, k = qk(64, torch.float16, seed=5)
    simulated_npu._npu_rotary_embedding(pos, q, k, 64, cos_sin_cache(64, 1e4).half(), True)
    qb, kb = q.bfloat16(), k.bfloat16()
    with pytest.raises(SimulatedNpuError, match="cached by the first call is torch.float16"):
        simulated_npu._npu_rotary_embedding(pos, qb, kb, 64, cos_sin_cache(64, 1e4).bfloat16(), True)


def test_atb_rope_high_precision_table_as_op_plugin_tests_it(simulated_npu):
    """op-plugin's Ascend910B test (test/test_custom_ops/test_atb_rope.py): float16 query/key
    [4, 32*128], float32 cos_sin_cache, GPT-J, head_size 128, checked against the textbook."""
    pos = torch.arange(4)
    g = torch.Generator().manual_seed(11)
    q, k = (torch.rand(4, 32 * 128, generator=g).half() for _ in range(2))
    cache = cos_sin_cache(128, 10000.0)
    want = reference.rotary_embedding(pos, q, k, 128, cache, False)
    simulated_npu._npu_rotary_embedding(pos, q, k, 128, cache, False)
    torch.testing.assert_close((q, k), want, **TOL[torch.float16])


@pytest.mark.sim_only
def test_atb_rope_width_alignment_rule(simulated_npu):
    pos, q, k = qk(8, torch.float16, seed=6, hq=1, hk=1)
    with pytest.raises(SimulatedNpuError, match="multiples of 16"):
        simulated_npu._npu_rotary_embedding(pos, q, k, 8, cos_sin_cache(8, 1e4).half(), True)


# ---- npu_mrope as torch_npu-npu_mrope.md and RopeWithSinCosCacheKernelNpuOpApi.cpp define it ---


@pytest.mark.parametrize("cache_mode", ["default", "interleave"])
@pytest.mark.parametrize("mode", ["half", "interleave"])
def test_mrope_partial_rotary_leaves_the_tail(simulated_npu, mode, cache_mode):
    """RoPE mode; cache_mode 'interleave' is ignored there (op-plugin's Ascend910B test)."""
    pos, q, k = qk(128, torch.bfloat16, seed=8)
    cache = cos_sin_cache(64, 10000.0).bfloat16()
    q0, k0 = q.clone(), k.clone()
    got_q, got_k = simulated_npu.npu_mrope(pos, q, k, cache, 128, mrope_section=[0, 0, 0], rotary_mode=mode,
                                           cache_mode=cache_mode)
    assert torch.equal(q, q0) and torch.equal(k, k0)  # out of place
    assert torch.equal(got_q.view(5, 4, 128)[..., 64:], q.view(5, 4, 128)[..., 64:])
    want = reference.rotary_embedding(pos, q, k, 128, cache, mode == "half")
    torch.testing.assert_close((got_q, got_k), want, **TOL[torch.bfloat16])


def test_mrope_sections_take_each_row_set(simulated_npu):
    """MRoPE [16, 24, 24] (rotary_dim 128, neox): frequency j of section i rotates by the
    positions of row i, i.e. like RoPE mode with positions[i] at dims j and j + 64."""
    g = torch.Generator().manual_seed(9)
    pos = torch.randint(0, MAX_POS, (3, 4), generator=g)
    q, k = torch.randn(4, 2 * 128, generator=g), torch.randn(4, 128, generator=g)
    cache = cos_sin_cache(128, 10000.0)
    got_q, got_k = simulated_npu.npu_mrope(pos, q, k, cache, 128, mrope_section=[16, 24, 24])
    for i, (lo, hi) in enumerate(((0, 16), (16, 40), (40, 64))):
        row_q, row_k = simulated_npu.npu_mrope(pos[i], q, k, cache, 128)
        for got, row, heads in ((got_q, row_q, 2), (got_k, row_k, 1)):
            g3, r3 = got.view(4, heads, 128), row.view(4, heads, 128)
            for cols in (slice(lo, hi), slice(lo + 64, hi + 64)):
                torch.testing.assert_close(g3[..., cols], r3[..., cols])


MROPE_RULES = [
    ("GPT-J spelled as the .md does", dict(rotary_mode="interleaved"), "rotary_mode only support half or interleave"),
    ("head_size 16 in bf16", dict(head_size=16, width=16), r"multiples of 32 for torch.bfloat16"),
    ("rotary_dim above head_size", dict(width=128), r"rotary_dim \(cos_sin_cache width 128\) must be <= head_size"),
    ("unknown cache mode", dict(cache_mode="x"), "cache_mode only support default or interleave"),
    ("sections need 2-D positions", dict(mrope_section=[8, 12, 12]), r"MRoPE needs positions \[3, num_tokens\]"),
    ("cache dtype", dict(cache_dtype=torch.float32), "cos_sin_cache must have query's dtype"),
    ("int16 positions", dict(pos_dtype=torch.int16), "positions must be int32/int64"),
]


@pytest.mark.sim_only
@pytest.mark.parametrize("change,match", [c[1:] for c in MROPE_RULES], ids=[c[0] for c in MROPE_RULES])
def test_mrope_documented_rules(simulated_npu, change, match):
    hs = change.pop("head_size", 64)
    width = change.pop("width", 64)
    pos, q, k = qk(hs, torch.bfloat16, seed=10)
    pos = pos.to(change.pop("pos_dtype", torch.int64))
    cache = cos_sin_cache(width, 1e4).to(change.pop("cache_dtype", torch.bfloat16))
    with pytest.raises(SimulatedNpuError, match=f"npu_mrope: .*{match}"):
        simulated_npu.npu_mrope(pos, q, k, cache, hs, **change)


@pytest.mark.sim_only
def test_mrope_section_sum_rule(simulated_npu):
    pos = torch.zeros(3, 2, dtype=torch.int64)
    q, k = torch.randn(2, 128).half(), torch.randn(2, 128).half()
    with pytest.raises(SimulatedNpuError, match=r"sum\(mrope_section\) must equal rotary_dim / 2 \(32\)"):
        simulated_npu.npu_mrope(pos, q, k, cos_sin_cache(64, 1e4).half(), 128, mrope_section=[16, 24, 24])
