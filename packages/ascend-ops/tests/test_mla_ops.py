# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""MLA ops against a float64 oracle written from the MLA definition (DeepSeek-V2): per request
and head, scores = scale * (q_nope . c_j + q_pe . k_pe_j) over the request's latent rows with
causal (bottom-right aligned) visibility; decode returns the weighted sum of c rows, prefill the
weighted sum of up-projected values. Every backend: reference, native (CPU) and the NPU branch
under the simulated torch_npu."""

from __future__ import annotations

import ascend_ops
import pytest
import torch

N, L, R, BS = 4, 32, 16, 16
SCALE = 0.15


def _paged_latent(kv_lens, dtype, seed):
    """Latent rows per request written into separate nope/rope caches at scattered blocks."""
    g = torch.Generator().manual_seed(seed)
    blocks = [-(-n // BS) for n in kv_lens]
    nb = sum(blocks) + 2
    perm = torch.randperm(nb, generator=g)
    table = torch.zeros(len(kv_lens), max(blocks), dtype=torch.int32)
    rows, start = [], 0
    nope = torch.zeros(nb, BS, 1, L, dtype=dtype)
    rope = torch.zeros(nb, BS, 1, R, dtype=dtype)
    for b, n in enumerate(kv_lens):
        table[b, : blocks[b]] = perm[start : start + blocks[b]].to(torch.int32)
        start += blocks[b]
        lat = torch.randn(n, L + R, generator=g).to(dtype)
        rows.append(lat)
        for p in range(n):
            blk, off = int(table[b, p // BS]), p % BS
            nope[blk, off, 0], rope[blk, off, 0] = lat[p, :L], lat[p, L:]
    return nope, rope, table, rows


def _oracle_latent(q_nope, q_pe, rows, ends, kv_lens):
    out = torch.zeros(q_nope.shape, dtype=torch.float64)
    start = 0
    for b, (end, kv) in enumerate(zip(ends, kv_lens, strict=True)):
        c, kpe = rows[b][:, :L].double(), rows[b][:, L:].double()
        for i in range(end - start):
            vis = kv - (end - start) + i + 1
            for h in range(N):
                s = (c[:vis] @ q_nope[start + i, h].double() + kpe[:vis] @ q_pe[start + i, h].double()) * SCALE
                out[start + i, h] = torch.softmax(s, 0) @ c[:vis]
        start = end
    return out


def _decode_case(dtype):
    g = torch.Generator().manual_seed(7)
    ends, kv_lens = [1, 2, 4], [5, 37, 20]  # two decodes and a 2-token (spec-style) request
    nope, rope, table, rows = _paged_latent(kv_lens, dtype, seed=3)
    q_nope = torch.randn(4, N, L, generator=g).to(dtype)
    q_pe = torch.randn(4, N, R, generator=g).to(dtype)
    want = _oracle_latent(q_nope, q_pe, rows, ends, kv_lens)
    return (q_nope, q_pe, nope, rope, table, ends, kv_lens, SCALE), want


def test_decode_cpu_backends_match_oracle(backend):
    args, want = _decode_case(torch.float32)
    got = ascend_ops.mla_decode(*args)
    torch.testing.assert_close(got.double(), want, atol=2e-5, rtol=2e-5)


def _prefill_case(dtype, dv=24):
    g = torch.Generator().manual_seed(11)
    ends, kv_lens = [3, 8, 9], [3, 12, 40]  # fresh prompt, chunk after 7 context rows, prefix hit
    total = sum(kv_lens)
    q = torch.randn(9, N, L, generator=g).to(dtype)
    k = torch.randn(total, N, L, generator=g).to(dtype)
    v = torch.randn(total, N, dv, generator=g).to(dtype)
    want = torch.zeros(9, N, dv, dtype=torch.float64)
    qs, ks = 0, 0
    for end, kv in zip(ends, kv_lens, strict=True):
        for i in range(end - qs):
            vis = kv - (end - qs) + i + 1
            for h in range(N):
                s = (k[ks : ks + vis, h].double() @ q[qs + i, h].double()) * SCALE
                want[qs + i, h] = torch.softmax(s, 0) @ v[ks : ks + vis, h].double()
        qs, ks = end, ks + kv
    return (q, k, v, ends, kv_lens, SCALE), want


def test_prefill_cpu_backends_match_oracle(backend):
    args, want = _prefill_case(torch.float32)
    got = ascend_ops.mla_prefill(*args)
    assert got.shape == want.shape
    torch.testing.assert_close(got.double(), want, atol=2e-5, rtol=2e-5)


def test_gather_context_and_cache_write(backend):
    kv_lens = [5, 0, 19]
    nope, rope, table, rows = _paged_latent(kv_lens, torch.float32, seed=5)
    c, kpe = ascend_ops.mla_gather_context(nope, rope, table, [3, 0, 19])
    want = torch.cat([rows[0][:3], rows[2][:19]])
    torch.testing.assert_close(torch.cat([c, kpe], -1), want, atol=0, rtol=0)
    # writing the latent rows back with reshape_and_cache (key = kv_c, value = k_pe) round-trips
    n2, r2 = torch.zeros_like(nope), torch.zeros_like(rope)
    slots = torch.cat([table[b, torch.arange(n) // BS].long() * BS + torch.arange(n) % BS
                       for b, n in enumerate(kv_lens) if n])
    lat = torch.cat([rows[0], rows[2]])
    ascend_ops.reshape_and_cache(lat[:, None, :L], lat[:, None, L:], n2, r2, slots)
    assert torch.equal(n2, nope) and torch.equal(r2, rope)


def test_bad_lengths_are_named():
    args, _ = _decode_case(torch.float32)
    with pytest.raises(ValueError, match="actual_seq_lengths"):
        ascend_ops.mla_decode(*args[:5], [1, 2, 5], args[6], SCALE)
    with pytest.raises(ValueError, match="actual_seq_lengths_kv"):
        ascend_ops.mla_decode(*args[:5], args[5], [5, 37], SCALE)


@pytest.mark.parametrize("dtype", [torch.bfloat16])
def test_npu_branch_under_simulator_matches_oracle(simulated_npu, dtype):
    from ascend_ops import simulator

    args, want = _decode_case(dtype)
    got = ascend_ops.mla_decode(*args)
    torch.testing.assert_close(got.double(), want, atol=3e-2, rtol=3e-2)
    # the .out overload (what a graph parameter update re-issues) writes the same result in place
    out = torch.full_like(got, float("nan"))
    lse = torch.empty(1, dtype=dtype)
    before = simulator.ledger().launches["npu_fused_infer_attention_score"]
    assert ascend_ops.mla_decode(*args, out=out, softmax_lse=lse) is out
    torch.testing.assert_close(out.double(), want, atol=3e-2, rtol=3e-2)
    assert simulator.ledger().launches["npu_fused_infer_attention_score"] == before + 1
    pargs, pwant = _prefill_case(dtype)
    got = ascend_ops.mla_prefill(*pargs)
    torch.testing.assert_close(got.double(), pwant, atol=3e-2, rtol=3e-2)
    launched = simulator.ledger().launches
    assert launched["npu_fused_infer_attention_score"] >= 2
    assert launched["_npu_reshape_and_cache"] >= 1  # prefill's scratch cache write
    assert simulator.ledger().host_syncs == 0, simulator.ledger().snapshot()
