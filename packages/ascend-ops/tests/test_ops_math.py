# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Each op vs independent math (formulas written here, not the package's reference code)."""

from __future__ import annotations

import math

import ascend_ops
import pytest
import torch
from conftest import TOL, make_paged_problem, naive_attention

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_formula(backend, dtype):
    x = torch.randn(5, 3, 64).to(dtype)
    w = torch.randn(64).to(dtype)
    xd = x.double()
    expect = xd / torch.sqrt((xd * xd).mean(-1, keepdim=True) + 1e-5) * w.double()
    got = ascend_ops.rms_norm(x, w, 1e-5)
    assert got.dtype == dtype and got.shape == x.shape
    torch.testing.assert_close(got.double(), expect.to(dtype).double(), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_add_rms_norm_formula(backend, dtype):
    x = torch.randn(7, 96).to(dtype)
    r = torch.randn(7, 96).to(dtype)
    w = torch.rand(96).to(dtype)
    out, new_res = ascend_ops.add_rms_norm(x, r, w, 1e-6)
    summed = (x.double() + r.double()).to(dtype)
    torch.testing.assert_close(new_res, summed, atol=0, rtol=0)
    sd = summed.double()
    expect = sd * (sd.pow(2).mean(-1, keepdim=True) + 1e-6).rsqrt() * w.double()
    torch.testing.assert_close(out.double(), expect.to(dtype).double(), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_swiglu_formula(backend, dtype):
    x = torch.randn(4, 2, 2 * 48).to(dtype)
    a, b = x.double().chunk(2, dim=-1)
    expect = a / (1 + torch.exp(-a)) * b
    got = ascend_ops.swiglu(x)
    assert got.shape == (4, 2, 48) and got.dtype == dtype
    torch.testing.assert_close(got.double(), expect.to(dtype).double(), **TOL[dtype])
    assert ascend_ops.silu_and_mul is ascend_ops.swiglu


def _roformer_cache(max_pos, rot, base=10000.0):
    inv = 1.0 / base ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot)
    ang = torch.arange(max_pos, dtype=torch.float64)[:, None] * inv[None, :]
    return ang, torch.cat((ang.cos(), ang.sin()), dim=-1)


def _rotate_half(x):  # HF transformers' neox-style helper
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rot_frac", [1.0, 0.5])
def test_rotary_neox_matches_hf_rotate_half(backend, dtype, rot_frac):
    t, hq, hk, d = 6, 4, 2, 64
    rot = int(d * rot_frac)
    ang, cache = _roformer_cache(32, rot)
    pos = torch.tensor([0, 3, 5, 31, 7, 1])
    q = torch.randn(t, hq * d).to(dtype)
    k = torch.randn(t, hk * d).to(dtype)
    qo, ko = ascend_ops.rotary_embedding(pos, q, k, d, cache.float(), True)
    emb = torch.cat((ang[pos], ang[pos]), dim=-1)[:, None, :]  # HF: cat(freqs, freqs)
    for x, got, h in ((q, qo, hq), (k, ko, hk)):
        xh = x.double().view(t, h, d)
        xr, xp = xh[..., :rot], xh[..., rot:]
        expect = torch.cat((xr * emb.cos() + _rotate_half(xr) * emb.sin(), xp), dim=-1)
        assert got.shape == x.shape and got.dtype == dtype
        torch.testing.assert_close(got.double().view(t, h, d), expect.to(dtype).double(), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_rotary_gptj_matches_complex_rotation(backend, dtype):
    # RoFormer eq. 34: pairs (x_{2i}, x_{2i+1}) rotate by angle m * theta_i -> complex multiply.
    t, h, d = 5, 3, 32
    ang, cache = _roformer_cache(16, d)
    pos = torch.tensor([1, 0, 15, 9, 2], dtype=torch.int32)
    q = torch.randn(t, h * d).to(dtype)
    k = torch.randn(t, h * d).to(dtype)
    qo, _ = ascend_ops.rotary_embedding(pos, q, k, d, cache.float(), False)
    z = torch.view_as_complex(q.double().view(t, h, d // 2, 2).contiguous())
    rotz = z * torch.polar(torch.ones_like(ang[pos.long()]), ang[pos.long()])[:, None, :]
    expect = torch.view_as_real(rotz).reshape(t, h * d)
    torch.testing.assert_close(qo.double(), expect.to(dtype).double(), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_reshape_and_cache_into_interleaved_views(backend, dtype):
    nb, bs, hk, d, t = 4, 8, 2, 16, 6
    buf = torch.zeros(nb, bs, hk, 2 * d, dtype=dtype)
    kc, vc = buf[..., :d], buf[..., d:]
    key = torch.randn(t, hk, d).to(dtype)
    val = torch.randn(t, hk, d).to(dtype)
    slots = torch.tensor([0, 9, -1, 31, 17, -5])
    ascend_ops.reshape_and_cache(key, val, kc, vc, slots)
    expect = torch.zeros_like(buf)
    for i, s in enumerate(slots.tolist()):
        if s >= 0:
            expect[s // bs, s % bs, :, :d] = key[i]
            expect[s // bs, s % bs, :, d:] = val[i]
    torch.testing.assert_close(buf, expect, atol=0, rtol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [True, False])
def test_attention_mixed_batch_vs_naive_loop(backend, dtype, causal):
    # prefill (q=kv), prefix hit (kv > q), decode (q=1), chunked prefill; GQA 4:1
    q_lens, kv_lens = [5, 3, 1, 1, 4], [5, 11, 9, 1, 20]
    p = make_paged_problem(q_lens, kv_lens, 8, 2, 32, 4, dtype, seed=3)
    scale = 1 / math.sqrt(32)
    got = ascend_ops.fused_infer_attention(
        p["query"], p["key_cache"], p["value_cache"], p["block_table"],
        p["query_start_loc"], p["seq_lens"], scale, causal,
    )
    assert got.shape == p["query"].shape and got.dtype == dtype
    tol = TOL[dtype] if dtype == torch.float32 else dict(atol=3e-2, rtol=3e-2)
    torch.testing.assert_close(got.double(), naive_attention(p, scale, causal), **tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("head_dim, step", [(32, 1), (32, 2), (24, 1)])
def test_attention_reads_only_written_slots_of_any_cache_layout(backend, dtype, head_dim, step):
    """Decode and prefill rows over a cache whose unwritten slots hold NaN (as ``torch.empty``
    memory may), with head_dim contiguous (``step`` 1: the native float32 kernel reads such a
    cache in place) or strided (``step`` 2, a view into a wider buffer), and a head_dim that is
    not a multiple of the kernel's 16 lanes (24)."""
    q_lens, kv_lens = [1, 1, 6, 2], [7, 21, 6, 18]
    p = make_paged_problem(q_lens, kv_lens, 6, 2, head_dim, 16, dtype, seed=11, extra_blocks=1)
    caches = []
    for name in ("key_cache", "value_cache"):
        valid = p[name]
        wide = torch.full((*valid.shape[:-1], head_dim * step), float("nan"), dtype=dtype)
        view = wide[..., ::step]
        written = torch.zeros(valid.shape[:2], dtype=torch.bool)
        for b, kv in enumerate(kv_lens):
            for j in range(kv):
                written[p["block_table"][b, j // 16], j % 16] = True
        view[written] = valid[written]
        caches.append(view)
    scale = head_dim ** -0.5
    got = ascend_ops.fused_infer_attention(p["query"], *caches, p["block_table"],
                                           p["query_start_loc"], p["seq_lens"], scale, True)
    assert not got.isnan().any()
    tol = TOL[dtype] if dtype == torch.float32 else dict(atol=3e-2, rtol=3e-2)
    torch.testing.assert_close(got.double(), naive_attention(p, scale, True), **tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_keeps_requests_apart_when_one_has_non_finite_keys(backend, dtype):
    """A request whose cached keys are inf (its own output is then undefined) leaves the next
    request's output untouched: a 16-token prefill then a one-token decode, head_dim 24 (the
    native kernel pads it to 32 lanes, and the two items share a thread's K tile in its two
    layouts). The decode row is finite, matches the float64 oracle over its own keys, and equals
    the same request run alone."""
    p = make_paged_problem([16, 1], [16, 5], 1, 1, 24, 16, dtype, seed=3, extra_blocks=1)
    key_cache = p["key_cache"].clone()
    key_cache[p["block_table"][0, 0]] = float("inf")  # all 16 of the prefill's keys
    scale = 24 ** -0.5
    got = ascend_ops.fused_infer_attention(p["query"], key_cache, p["value_cache"],
                                           p["block_table"], p["query_start_loc"], p["seq_lens"],
                                           scale, True)
    alone = ascend_ops.fused_infer_attention(p["query"][16:], key_cache, p["value_cache"],
                                             p["block_table"][1:],
                                             torch.tensor([0, 1], dtype=torch.int32),
                                             p["seq_lens"][1:], scale, True)
    assert torch.isfinite(got[16:]).all()
    tol = TOL[dtype] if dtype == torch.float32 else dict(atol=3e-2, rtol=3e-2)
    torch.testing.assert_close(got[16:].double(), naive_attention(p, scale, True)[16:], **tol)
    torch.testing.assert_close(got[16:], alone, atol=0, rtol=0)


def test_attention_bsnd_layout(backend):
    q_lens, kv_lens = [3, 1], [6, 4]
    p = make_paged_problem(q_lens, kv_lens, 4, 4, 16, 4, torch.float32, seed=5)
    s = 4
    bsnd = torch.zeros(2, s, 4, 16)
    bsnd[0, :3] = p["query"][:3]
    bsnd[1, :1] = p["query"][3:4]
    got = ascend_ops.fused_infer_attention(
        bsnd, p["key_cache"], p["value_cache"], p["block_table"], p["query_start_loc"],
        p["seq_lens"], 0.25, True, layout="BSND",
    )
    ref = naive_attention(p, 0.25, True).float()
    torch.testing.assert_close(got[0, :3], ref[:3])
    torch.testing.assert_close(got[1, :1], ref[3:4])
    assert torch.count_nonzero(got[0, 3:]) == 0 and torch.count_nonzero(got[1, 1:]) == 0


def test_call_counts_track_each_op(backend):
    ascend_ops.reset_call_counts()
    x = torch.randn(2, 8)
    ascend_ops.rms_norm(x, torch.ones(8))
    ascend_ops.swiglu(x)
    ascend_ops.swiglu(x)
    assert ascend_ops.call_counts() == {"rms_norm": 1, "swiglu": 2}
    assert ascend_ops.call_counts(per_backend=True)[("swiglu", backend)] == 2
    ascend_ops.reset_call_counts()
    assert ascend_ops.call_counts() == {}
