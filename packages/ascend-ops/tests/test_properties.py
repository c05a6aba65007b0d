# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Hypothesis properties: native kernels == pure-torch reference within dtype tolerance.

Bounded by the "ci" profile registered in conftest.py (max_examples=15, no deadline).
"""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from ascend_ops import reference
from conftest import make_paged_problem
from hypothesis import given
from hypothesis import strategies as st

pytestmark = pytest.mark.skipif(
    not ascend_ops.native_available(), reason="ascend_ops._C not built: nothing to compare"
)

DTYPES = st.sampled_from([torch.float32, torch.bfloat16, torch.float16])
TOL = {
    torch.float32: dict(atol=1e-4, rtol=1e-4),
    torch.bfloat16: dict(atol=3e-2, rtol=3e-2),
    torch.float16: dict(atol=4e-3, rtol=4e-3),
}


def _native(fn, *args):
    with ascend_ops.use_backend("native"):
        return fn(*args)


@st.composite
def attention_problems(draw):
    ratio = draw(st.sampled_from([1, 3, 4, 8]))  # 3: SmolLM2's GQA group (padded register tiles)
    hk = draw(st.sampled_from([1, 2]))
    # 24: a head_dim that is not a multiple of the native kernel's 16 lanes (padded tiles)
    d = draw(st.sampled_from([24, 64, 128, 256]))
    bs = draw(st.sampled_from([16, 128]))
    batch = draw(st.integers(1, 32))
    budget = max(1, 160 // batch)  # keep total query tokens small
    q_lens = draw(st.lists(st.integers(1, min(budget, 24)), min_size=batch, max_size=batch))
    extra = draw(st.lists(st.integers(0, 150), min_size=batch, max_size=batch))
    return dict(
        q_lens=q_lens, kv_lens=[q + e for q, e in zip(q_lens, extra, strict=True)], num_heads=hk * ratio,
        num_kv_heads=hk, head_dim=d, block_size=bs, dtype=draw(DTYPES),
        causal=draw(st.booleans()), seed=draw(st.integers(0, 2**16)),
    )


@given(attention_problems())
def test_attention_native_matches_reference(spec):
    causal = spec.pop("causal")
    p = make_paged_problem(spec.pop("q_lens"), spec.pop("kv_lens"), **spec, extra_blocks=1)
    args = [p[n] for n in ("query", "key_cache", "value_cache", "block_table", "query_start_loc", "seq_lens")]
    scale = spec["head_dim"] ** -0.5
    got = _native(ascend_ops.fused_infer_attention, *args, scale, causal)
    torch.testing.assert_close(got, reference.fused_infer_attention(*args, scale, causal), **TOL[spec["dtype"]])


@given(st.integers(1, 40), st.sampled_from([64, 96, 4096]), DTYPES, st.sampled_from([None, torch.float32]))
def test_norms_native_match_reference(rows, hidden, dtype, wdtype):
    g = torch.Generator().manual_seed(rows * hidden)
    x = torch.randn(rows, hidden, generator=g).to(dtype)
    res = torch.randn(rows, hidden, generator=g).to(dtype)
    w = torch.rand(hidden, generator=g).to(wdtype or dtype)
    torch.testing.assert_close(_native(ascend_ops.rms_norm, x, w, 1e-6), reference.rms_norm(x, w, 1e-6), **TOL[dtype])
    out, new_res = _native(ascend_ops.add_rms_norm, x, res, w, 1e-6)
    ref_out, ref_res = reference.add_rms_norm(x, res, w, 1e-6)
    torch.testing.assert_close(new_res, ref_res, atol=0, rtol=0)
    torch.testing.assert_close(out, ref_out, **TOL[dtype])


@given(st.integers(1, 40), st.sampled_from([8, 64, 1376]), DTYPES)
def test_swiglu_native_matches_reference(rows, inter, dtype):
    x = torch.randn(rows, 2 * inter, generator=torch.Generator().manual_seed(rows)).to(dtype) * 4
    torch.testing.assert_close(_native(ascend_ops.swiglu, x), reference.swiglu(x), **TOL[dtype])


@given(
    st.integers(1, 40), st.sampled_from([(1, 1), (4, 1), (8, 2)]), st.sampled_from([64, 128, 256]),
    st.sampled_from([1.0, 0.5, 0.25]), st.booleans(), DTYPES,
)
def test_rotary_native_matches_reference(tokens, heads, head_size, frac, neox, dtype):
    g = torch.Generator().manual_seed(tokens + head_size)
    rot = int(head_size * frac)
    cache = torch.randn(64, rot, generator=g)
    pos = torch.randint(0, 64, (tokens,), generator=g)
    q = torch.randn(tokens, heads[0] * head_size, generator=g).to(dtype)
    k = torch.randn(tokens, heads[1] * head_size, generator=g).to(dtype)
    got = _native(ascend_ops.rotary_embedding, pos, q, k, head_size, cache, neox)
    expect = reference.rotary_embedding(pos, q, k, head_size, cache, neox)
    for a, b in zip(got, expect, strict=True):
        torch.testing.assert_close(a, b, **TOL[dtype])


@given(st.integers(1, 64), st.sampled_from([16, 128]), st.sampled_from([1, 4]), st.booleans(), DTYPES)
def test_reshape_and_cache_native_matches_reference(tokens, bs, hk, interleaved, dtype):
    g = torch.Generator().manual_seed(tokens * bs)
    nb, d = 4 + tokens // bs, 64
    slots = torch.randperm(nb * bs, generator=g)[:tokens]
    slots[torch.rand(tokens, generator=g) < 0.2] = -1
    key = torch.randn(tokens, hk, d, generator=g).to(dtype)
    val = torch.randn(tokens, hk, d, generator=g).to(dtype)
    bufs = []
    for _ in range(2):
        if interleaved:
            b = torch.zeros(nb, bs, hk, 2 * d, dtype=dtype)
            bufs.append((b, b[..., :d], b[..., d:]))
        else:
            kc, vc = torch.zeros(nb, bs, hk, d, dtype=dtype), torch.zeros(nb, bs, hk, d, dtype=dtype)
            bufs.append(((kc, vc), kc, vc))
    _native(ascend_ops.reshape_and_cache, key, val, bufs[0][1], bufs[0][2], slots)
    reference.reshape_and_cache(key, val, bufs[1][1], bufs[1][2], slots)
    torch.testing.assert_close(bufs[0][1], bufs[1][1], atol=0, rtol=0)
    torch.testing.assert_close(bufs[0][2], bufs[1][2], atol=0, rtol=0)


@st.composite
def encoder_problems(draw):
    hk = draw(st.sampled_from([1, 2, 4]))
    ratio = draw(st.sampled_from([1, 2, 4]))
    d = draw(st.sampled_from([24, 64, 72, 80, 128]))
    lens = draw(st.lists(st.integers(0, 300), min_size=1, max_size=6))
    return dict(lens=lens, hq=hk * ratio, hk=hk, d=d, dtype=draw(DTYPES),
                seed=draw(st.integers(0, 2**16)))


@given(encoder_problems())
def test_encoder_attention_native_matches_reference(spec):
    """The native branch reads packed K/V through overlapping 128-row windows
    (native/encoder_attention.py): sequences of any length at any offset, crossing windows."""
    g = torch.Generator().manual_seed(spec["seed"])
    t, dtype = sum(spec["lens"]), spec["dtype"]
    q = torch.randn(t, spec["hq"], spec["d"], generator=g).to(dtype)
    k = torch.randn(t, spec["hk"], spec["d"], generator=g).to(dtype)
    v = torch.randn(t, spec["hk"], spec["d"], generator=g).to(dtype)
    ends = torch.tensor(spec["lens"]).cumsum(0).tolist()
    cu = torch.tensor([0, *ends], dtype=torch.int32)
    scale = spec["d"] ** -0.5
    got = _native(ascend_ops.encoder_attention, q, k, v, cu, scale)
    torch.testing.assert_close(got, reference.encoder_attention(q, k, v, ends, scale), **TOL[dtype])
