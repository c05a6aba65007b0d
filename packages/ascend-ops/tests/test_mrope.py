# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``mrope`` (multimodal rotary embedding): every CPU backend against a plain torch M-RoPE
written from transformers' formulation (``Qwen2VLRotaryEmbedding.recomposition_frequencies`` +
``apply_rotary_pos_emb`` in models/qwen2_vl/modeling_qwen2_vl.py; Qwen3-VL's interleaved
``recomposition_frequencies`` in models/qwen3_vl/modeling_qwen3_vl.py): frequencies computed
from the position ids, full-width cos/sin, ``rotate_half``, no cos/sin cache. Then the NPU branch
(``torch_npu.npu_mrope``) through the simulated NPU, and bad input refused by name."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from ascend_ops import reference

TOL = {torch.float32: dict(atol=2e-5, rtol=2e-5), torch.bfloat16: dict(atol=3e-2, rtol=3e-2),
       torch.float16: dict(atol=3e-3, rtol=3e-3)}
MAX_POS = 256
THETA = 1000000.0


def inv_freq(rotary_dim: int) -> torch.Tensor:
    return 1.0 / THETA ** (torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim)


def cos_sin_cache(rotary_dim: int) -> torch.Tensor:
    """vLLM's cache: row p = cat(cos(p * f), sin(p * f))."""
    freqs = torch.arange(MAX_POS, dtype=torch.float64)[:, None] * inv_freq(rotary_dim)[None, :]
    return torch.cat((freqs.cos(), freqs.sin()), dim=-1).float()


def hf_mrope(positions, x, head_size, rotary_dim, section, interleaved):
    """transformers' M-RoPE on x [T, H*head_size] (float64): freqs [3, T, rot/2] from the ids,
    recomposed per section (Qwen2-VL: split by section, chunk i from row i; Qwen3-VL: row 0
    overwritten at 1::3 / 2::3 up to 3 * section), doubled to full width, q*cos + rotate_half(q)*sin
    on the first rotary_dim dims of each head."""
    freqs = positions.double()[..., None] * inv_freq(rotary_dim)  # [3, T, rot/2]

    def recompose(f):
        if interleaved:
            out = f[0].clone()
            for dim, offset in ((1, 1), (2, 2)):
                idx = slice(offset, section[dim] * 3, 3)
                out[..., idx] = f[dim, ..., idx]
        else:
            out = torch.cat([m[i % 3] for i, m in enumerate(f.split(section, dim=-1))], dim=-1)
        return torch.cat((out, out), dim=-1)

    cos, sin = recompose(freqs.cos())[:, None], recompose(freqs.sin())[:, None]  # [T, 1, rot]
    t = x.shape[0]
    heads = x.double().view(t, -1, head_size)
    xr, xp = heads[..., :rotary_dim], heads[..., rotary_dim:]
    half = rotary_dim // 2
    rotated = torch.cat((-xr[..., half:], xr[..., :half]), dim=-1)
    return torch.cat((xr * cos + rotated * sin, xp), dim=-1).view(t, -1)


def qwen_positions(t: int, seed: int) -> torch.Tensor:
    """3 rows of position ids: a text prefix (one id repeated), an image grid (t, h, w ids
    differ), more text after it, as Qwen2-VL's get_rope_index builds them."""
    g = torch.Generator().manual_seed(seed)
    text = 3
    grid_h, grid_w = 2, (t - 2 * text) // 2
    img = torch.stack(torch.meshgrid(torch.zeros(1, dtype=torch.long), torch.arange(grid_h), torch.arange(grid_w),
                                     indexing="ij")).reshape(3, -1) + text
    after = torch.arange(t - text - img.shape[1]) + int(img.max()) + 1
    pos = torch.cat((torch.arange(text).expand(3, -1), img.long(), after.expand(3, -1)), dim=1)
    return (pos + torch.randint(0, 100, (1,), generator=g)).long()


# (head_size, rotary_dim, mrope_section, interleaved): Qwen2/2.5-VL, Qwen3-VL, a 64-wide
# rotary (section [8, 12, 12]), a section list npu_mrope does not document, partial rotary
CASES = [
    (128, 128, [16, 24, 24], False),
    (128, 128, [24, 20, 20], True),
    (64, 64, [8, 12, 12], False),
    (64, 64, [8, 12, 12], True),
    (128, 128, [32, 16, 16], False),
    (128, 64, [8, 12, 12], False),
]


def inputs(head_size, dtype, seed, t=14, hq=4, hk=2):
    g = torch.Generator().manual_seed(seed)
    pos = qwen_positions(t, seed)
    q = torch.randn(t, hq * head_size, generator=g).to(dtype)
    k = torch.randn(t, hk * head_size, generator=g).to(dtype)
    return pos, q, k


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("head_size,rotary_dim,section,interleaved", CASES)
def test_cpu_backends_match_transformers_mrope(backend, head_size, rotary_dim, section, interleaved,
                                               dtype):
    pos, q, k = inputs(head_size, dtype, seed=rotary_dim + sum(section[:1]))
    cache = cos_sin_cache(rotary_dim)
    got_q, got_k = ascend_ops.mrope(pos, q, k, head_size, cache, section, interleaved=interleaved)
    assert got_q.dtype == dtype and got_q.shape == q.shape and got_k.shape == k.shape
    want_q = hf_mrope(pos, q, head_size, rotary_dim, section, interleaved)
    want_k = hf_mrope(pos, k, head_size, rotary_dim, section, interleaved)
    torch.testing.assert_close(got_q.double(), want_q, **TOL[dtype])
    torch.testing.assert_close(got_k.double(), want_k, **TOL[dtype])


def test_equal_position_rows_are_plain_rope(backend):
    """Text tokens (the three ids equal) get exactly rotary_embedding's result."""
    pos = torch.arange(9).expand(3, -1).contiguous()
    _, q, k = inputs(128, torch.float32, seed=5, t=9)
    cache = cos_sin_cache(128)
    for interleaved in (False, True):
        got = ascend_ops.mrope(pos, q, k, 128, cache, [24, 20, 20], interleaved=interleaved)
        want = ascend_ops.rotary_embedding(pos[0], q, k, 128, cache, True)
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)


def test_transformers_when_installed():
    """Against transformers' own recomposition (skipped where transformers is absent)."""
    modeling = pytest.importorskip("transformers.models.qwen2_vl.modeling_qwen2_vl")
    pos, q, k = inputs(128, torch.float32, seed=11)
    inv = inv_freq(128).float()
    freqs = pos.float()[..., None] * inv  # [3, T, 64]
    holder = type("H", (), {"mrope_section": [16, 24, 24]})()
    cos = modeling.Qwen2VLRotaryEmbedding.recomposition_frequencies(holder, freqs.cos())
    sin = modeling.Qwen2VLRotaryEmbedding.recomposition_frequencies(holder, freqs.sin())
    qh = q.view(14, 4, 128).transpose(0, 1)[None]  # [1, H, T, D]
    kh = k.view(14, 2, 128).transpose(0, 1)[None]
    want_q, want_k = modeling.apply_rotary_pos_emb(qh, kh, cos[None], sin[None])
    got_q, got_k = ascend_ops.mrope(pos, q, k, 128, cos_sin_cache(128), [16, 24, 24])
    torch.testing.assert_close(got_q, want_q[0].transpose(0, 1).reshape(14, -1), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got_k, want_k[0].transpose(0, 1).reshape(14, -1), atol=1e-5, rtol=1e-5)


# (dtype, head_size, rotary_dim, section, interleaved, npu_mrope launches)
NPU_CASES = [
    (torch.bfloat16, 128, 128, [16, 24, 24], False, 1),
    (torch.float16, 128, 128, [24, 20, 20], True, 1),
    (torch.bfloat16, 64, 64, [8, 12, 12], True, 1),
    (torch.float32, 128, 128, [16, 24, 24], False, 1),
    (torch.bfloat16, 128, 128, [32, 16, 16], False, 0),   # undocumented section: aten math
    (torch.float16, 80, 64, [8, 12, 12], False, 0),       # head_size off the 32-alignment
]


@pytest.mark.parametrize("dtype,head_size,rotary_dim,section,interleaved,launches", NPU_CASES)
def test_npu_branch_matches_native_and_reference(simulated_npu, dtype, head_size, rotary_dim,
                                                 section, interleaved, launches):
    from ascend_ops import simulator

    pos, q, k = inputs(head_size, dtype, seed=head_size + launches)
    cache = cos_sin_cache(rotary_dim)
    ascend_ops.reset_call_counts()
    got_q, got_k = ascend_ops.mrope(pos, q, k, head_size, cache, section, interleaved=interleaved)
    assert ascend_ops.call_counts(per_backend=True).get(("mrope", "npu")) == 1
    tol = TOL[dtype]
    want_q, want_k = reference.mrope(pos, q, k, head_size, cache.to(dtype), section, interleaved, True)
    torch.testing.assert_close(got_q.float(), want_q.float(), **tol)
    torch.testing.assert_close(got_k.float(), want_k.float(), **tol)
    torch.testing.assert_close(got_q.double(), hf_mrope(pos, q, head_size, rotary_dim, section,
                                                        interleaved), **tol)
    if ascend_ops.native_available():
        from ascend_ops.native import mrope as native

        nq, nk = native.mrope(pos, q, k, head_size, cache.to(dtype), section, interleaved, True)
        torch.testing.assert_close(got_q.float(), nq.float(), **tol)
        torch.testing.assert_close(got_k.float(), nk.float(), **tol)
    if not simulator_is_real():
        assert simulator.ledger().launches.get("npu_mrope", 0) == launches


def simulator_is_real() -> bool:
    from conftest import real_npu_tier

    return real_npu_tier()


@pytest.mark.sim_only
def test_simulated_npu_mrope_interleave_follows_its_document(simulated_npu):
    """npu_mrope's cache_mode='interleave' (torch_npu-npu_mrope.md@09fca6f) equals the
    transformers Qwen3-VL layout for [24, 20, 20]; a 4-section list refuses it."""
    from ascend_ops.simulator import SimulatedNpuError

    pos, q, k = inputs(128, torch.float32, seed=2)
    cache = cos_sin_cache(128)
    got_q, _ = simulated_npu.npu_mrope(pos, q, k, cache, 128, mrope_section=[24, 20, 20],
                                       rotary_mode="half", cache_mode="interleave")
    torch.testing.assert_close(got_q.double(), hf_mrope(pos, q, 128, 128, [24, 20, 20], True),
                               atol=2e-5, rtol=2e-5)
    pos4 = torch.cat((pos, pos[:1]))
    with pytest.raises(SimulatedNpuError, match="16, 16, 16, 16"):
        simulated_npu.npu_mrope(pos4, q, k, cache, 128, mrope_section=[16, 16, 16, 16],
                                rotary_mode="half", cache_mode="interleave")


BAD = [
    (dict(positions=lambda p: p[0]), ValueError, "positions"),
    (dict(positions=lambda p: p.float()), TypeError, "positions"),
    (dict(query=lambda q: q.int()), TypeError, "query"),
    (dict(key=lambda k: k[:-1]), ValueError, "key"),
    (dict(key=lambda k: k.double()), TypeError, "key"),
    (dict(section=lambda s: [16, 24, 23]), ValueError, "mrope_section"),
    (dict(section=lambda s: [16, 48]), ValueError, "mrope_section"),
    (dict(cache=lambda c: torch.cat((c, c[:, :2]), dim=1)), ValueError, "cos_sin_cache"),
]


@pytest.mark.parametrize("change,exc,name", BAD)
def test_bad_input_is_refused_by_name(backend, change, exc, name):
    pos, q, k = inputs(128, torch.float32, seed=0)
    cache, section = cos_sin_cache(128), [16, 24, 24]
    pos = change.get("positions", lambda x: x)(pos)
    q = change.get("query", lambda x: x)(q)
    k = change.get("key", lambda x: x)(k)
    section = change.get("section", lambda x: x)(section)
    cache = change.get("cache", lambda x: x)(cache)
    with pytest.raises(exc, match=name):
        ascend_ops.mrope(pos, q, k, 128, cache, section)


def test_positions_outside_the_cache_are_refused(backend):
    pos, q, k = inputs(128, torch.float32, seed=0)
    with pytest.raises(ValueError, match="positions"):
        ascend_ops.mrope(pos + MAX_POS, q, k, 128, cos_sin_cache(128), [16, 24, 24])


def test_registered_op_passes_opcheck():
    pos, q, k = inputs(64, torch.float32, seed=1)
    torch.library.opcheck(torch.ops.ascend.mrope.default,
                          (pos, q, k, 64, cos_sin_cache(64), [8, 12, 12], True, True))


@pytest.mark.parametrize("interleaved", [False, True])
def test_npu_branch_gptj_pairs_match_cpu_backends(simulated_npu, interleaved):
    """``is_neox=False`` reaches npu_mrope as ``rotary_mode="interleave"`` (GPT-J pairs) and
    agrees with the reference and native branches."""
    pos, q, k = inputs(128, torch.bfloat16, seed=21)
    cache = cos_sin_cache(128)
    section = [24, 20, 20]
    got = ascend_ops.mrope(pos, q, k, 128, cache, section, interleaved=interleaved, is_neox=False)
    want = reference.mrope(pos, q, k, 128, cache.to(torch.bfloat16), section, interleaved, False)
    torch.testing.assert_close(got, want, **TOL[torch.bfloat16])
    if ascend_ops.native_available():
        from ascend_ops.native import mrope as native

        torch.testing.assert_close(got, native.mrope(pos, q, k, 128, cache.to(torch.bfloat16), section,
                                                     interleaved, False), **TOL[torch.bfloat16])
