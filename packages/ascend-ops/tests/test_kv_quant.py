# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Scaled KV caches (vLLM ``kv_cache_dtype`` fp8 / fp8_e5m2, and fp16/bf16 under float32):
quantize on write, dequantize on read, in the CPU branches; the NPU branch refuses by SoC rule.

Oracles: the float8 formats' definitions (OCP 8-bit float spec: e4m3fn largest finite 448,
3 mantissa bits; e5m2 largest finite 57344, 2 mantissa bits) and the naive attention loop of
conftest over the dequantized K/V."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from conftest import make_paged_problem, naive_attention

FP8 = {torch.float8_e4m3fn: (448.0, 3), torch.float8_e5m2: (57344.0, 2)}


def _scatter(cache_dtype, scale, backend_values):
    key, value = backend_values
    kc = torch.zeros(4, 16, 2, 8, dtype=cache_dtype)
    vc = torch.zeros_like(kc)
    slots = torch.tensor([0, 17, -1, 63])
    ascend_ops.reshape_and_cache(key, value, kc, vc, slots, k_scale=scale, v_scale=2 * scale)
    flat_k, flat_v = kc.view(64, 2, 8), vc.view(64, 2, 8)
    return flat_k[[0, 17, 63]], flat_v[[0, 17, 63]], key[[0, 1, 3]], value[[0, 1, 3]]


@pytest.mark.parametrize("cache_dtype", list(FP8))
@pytest.mark.parametrize("scale", [1.0, 0.05])
def test_fp8_write_is_saturated_scaled_rounding(backend, cache_dtype, scale):
    limit, mant = FP8[cache_dtype]
    g = torch.Generator().manual_seed(0)
    key = torch.randn(4, 2, 8, generator=g) * 4
    key[0, 0, 0] = 1e6  # far beyond the format: must saturate, never inf/NaN
    value = torch.randn(4, 2, 8, generator=g)
    sk, sv, k, v = _scatter(cache_dtype, scale, (key, value))
    for stored, x, s in ((sk, k, scale), (sv, v, 2 * scale)):
        back = stored.float() * s
        assert torch.isfinite(back).all()
        want = (x / s).clamp(-limit, limit) * s
        # round-to-nearest with `mant` mantissa bits: relative error <= 2^-(mant+1), plus the
        # subnormal spacing near zero
        tol = want.abs() * 2.0 ** -(mant + 1) + s * 2.0 ** -(9 if mant == 3 else 16)
        assert ((back - want).abs() <= tol).all()
    assert sk[0, 0, 0].float() == limit


def test_exact_values_round_trip(backend):
    key = torch.tensor([1.5, -0.25, 448.0, 0.0] * 4).view(4, 2, 2).repeat(1, 1, 4)
    kc = torch.zeros(1, 16, 2, 8, dtype=torch.float8_e4m3fn)
    vc = torch.zeros_like(kc)
    ascend_ops.reshape_and_cache(key, key, kc, vc, torch.arange(4))
    assert torch.equal(kc[0, :4].float(), key)


@pytest.mark.parametrize("cache_dtype", [torch.float8_e4m3fn, torch.float8_e5m2, torch.bfloat16])
@pytest.mark.parametrize("causal", [True, False])
def test_attention_reads_dequantized_cache(backend, cache_dtype, causal):
    scale_k, scale_v = (0.5, 0.25) if cache_dtype in FP8 else (1.0, 1.0)
    p = make_paged_problem([3, 1, 5], [3, 20, 37], 4, 2, 16, 16, torch.float32, seed=3)
    kc = (p["key_cache"] / scale_k).to(cache_dtype)
    vc = (p["value_cache"] / scale_v).to(cache_dtype)
    # the oracle attends over what the cache holds, read back by the format definition
    p["dense_k"] = [(k / scale_k).to(cache_dtype).float() * scale_k for k in p["dense_k"]]
    p["dense_v"] = [(v / scale_v).to(cache_dtype).float() * scale_v for v in p["dense_v"]]
    want = naive_attention(p, 0.25, causal).float()
    got = ascend_ops.fused_infer_attention(
        p["query"], kc, vc, p["block_table"], p["query_start_loc"], p["seq_lens"], 0.25, causal,
        k_scale=scale_k, v_scale=scale_v,
    )
    torch.testing.assert_close(got, want, atol=2e-5, rtol=2e-5)
    lse = p["query"].new_empty(1)
    out = torch.empty_like(p["query"])
    ascend_ops.fused_infer_attention(
        p["query"], kc, vc, p["block_table"], p["query_start_loc"], p["seq_lens"], 0.25, causal,
        actual_seq_lengths=[3, 4, 9], actual_seq_lengths_kv=[3, 20, 37], out=out,
        softmax_lse=lse, k_scale=scale_k, v_scale=scale_v,
    )
    torch.testing.assert_close(out, want, atol=2e-5, rtol=2e-5)


def test_bad_scales_and_dtypes_are_named():
    key = torch.randn(2, 2, 8)
    kc = torch.zeros(1, 16, 2, 8, dtype=torch.float8_e4m3fn)
    with pytest.raises(ValueError, match="k_scale"):
        ascend_ops.reshape_and_cache(key, key, kc, kc.clone(), torch.arange(2), k_scale=0.0)
    with pytest.raises(ValueError, match="v_scale=2.0 applies to float8 caches only"):
        ascend_ops.reshape_and_cache(
            key, key, kc.float(), kc.float(), torch.arange(2), v_scale=2.0
        )
    with pytest.raises(TypeError, match="key_cache must be float32"):
        ascend_ops.reshape_and_cache(key, key, kc.to(torch.int8), kc.to(torch.int8), torch.arange(2))
    with pytest.raises(TypeError, match="cannot store"):
        ascend_ops.reshape_and_cache(key.half(), key.half(), kc.float(), kc.float(), torch.arange(2))


def test_npu_branch_refuses_fp8_cache_by_soc_rule(simulated_npu):
    key = torch.randn(2, 2, 16, dtype=torch.float16)
    kc = torch.zeros(2, 16, 2, 16, dtype=torch.float8_e4m3fn)
    with pytest.raises(ValueError, match=r"Atlas A2/A3 \(Ascend 910B/910_93\).*--kv-cache-dtype auto"):
        ascend_ops.reshape_and_cache(key, key, kc, kc.clone(), torch.arange(2, dtype=torch.int32))
    p = make_paged_problem([1], [5], 2, 2, 16, 16, torch.float16)
    with pytest.raises(ValueError, match="fused_infer_attention: a torch.float8_e5m2 KV cache"):
        ascend_ops.fused_infer_attention(
            p["query"], p["key_cache"].to(torch.float8_e5m2), p["value_cache"].to(torch.float8_e5m2),
            p["block_table"], p["query_start_loc"], p["seq_lens"], 0.25, True,
        )
