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
# FIA's MLA path (simulated NPU): latent width 512 (or 128), rope dim 64, as DeepSeek-V2/V3
NPU_L, NPU_R = 512, 64


def _paged_latent(kv_lens, dtype, seed, lat=L, rope_dim=R):
    """Latent rows per request written into separate nope/rope caches at scattered blocks."""
    g = torch.Generator().manual_seed(seed)
    blocks = [-(-n // BS) for n in kv_lens]
    nb = sum(blocks) + 2
    perm = torch.randperm(nb, generator=g)
    table = torch.zeros(len(kv_lens), max(blocks), dtype=torch.int32)
    rows, start = [], 0
    nope = torch.zeros(nb, BS, 1, lat, dtype=dtype)
    rope = torch.zeros(nb, BS, 1, rope_dim, dtype=dtype)
    for b, n in enumerate(kv_lens):
        table[b, : blocks[b]] = perm[start : start + blocks[b]].to(torch.int32)
        start += blocks[b]
        row = torch.randn(n, lat + rope_dim, generator=g).to(dtype)
        rows.append(row)
        for p in range(n):
            blk, off = int(table[b, p // BS]), p % BS
            nope[blk, off, 0], rope[blk, off, 0] = row[p, :lat], row[p, lat:]
    return nope, rope, table, rows


def _oracle_latent(q_nope, q_pe, rows, ends, kv_lens):
    out = torch.zeros(q_nope.shape, dtype=torch.float64)
    start, lat = 0, q_nope.shape[-1]
    for b, (end, kv) in enumerate(zip(ends, kv_lens, strict=True)):
        c, kpe = rows[b][:, :lat].double(), rows[b][:, lat:].double()
        for i in range(end - start):
            vis = kv - (end - start) + i + 1
            for h in range(q_nope.shape[1]):
                s = (c[:vis] @ q_nope[start + i, h].double() + kpe[:vis] @ q_pe[start + i, h].double()) * SCALE
                out[start + i, h] = torch.softmax(s, 0) @ c[:vis]
        start = end
    return out


def _decode_case(dtype, heads=N, lat=L, rope_dim=R):
    g = torch.Generator().manual_seed(7)
    ends, kv_lens = [1, 2, 4], [5, 37, 20]  # two decodes and a 2-token (spec-style) request
    nope, rope, table, rows = _paged_latent(kv_lens, dtype, 3, lat, rope_dim)
    q_nope = torch.randn(4, heads, lat, generator=g).to(dtype)
    q_pe = torch.randn(4, heads, rope_dim, generator=g).to(dtype)
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


@pytest.mark.sim_only
@pytest.mark.parametrize("dtype", [torch.bfloat16])
def test_npu_branch_under_simulator_matches_oracle(simulated_npu, dtype):
    from ascend_ops import simulator

    args, want = _decode_case(dtype, lat=NPU_L, rope_dim=NPU_R)
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


@pytest.mark.sim_only
@pytest.mark.parametrize("heads", [6, 12])
def test_npu_decode_pads_heads_to_a_power_of_two(simulated_npu, heads):
    """TP-split head counts (e.g. 96 / 8 = 12): FIA's MLA path takes 1/2/4/.../128 query heads
    with a 512-wide latent (simulator rule); the NPU branch zero-pads the heads for the call and
    drops them, so the result equals the oracle for the real heads."""
    from ascend_ops import simulator

    args, want = _decode_case(torch.bfloat16, heads, NPU_L, NPU_R)
    got = ascend_ops.mla_decode(*args)
    assert got.shape == want.shape and got.is_contiguous()
    torch.testing.assert_close(got.double(), want, atol=3e-2, rtol=3e-2)
    assert simulator.ledger().launches["npu_fused_infer_attention_score"] == 1
    # out= (the graph form) needs the padded count, made by the caller outside the call
    padded = ascend_ops.mla_decode_heads(args[0])
    assert padded == 1 << (heads - 1).bit_length()
    lse = torch.empty(1, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="power-of-two head count"):
        ascend_ops.mla_decode(*args, out=torch.empty_like(got), softmax_lse=lse)
    q_nope, q_pe = (torch.nn.functional.pad(t, (0, 0, 0, padded - heads)) for t in args[:2])
    out = torch.full((4, padded, NPU_L), float("nan"), dtype=torch.bfloat16)
    ws = ascend_ops.mla_decode_workspace(q_nope, q_pe, *args[2:])
    assert isinstance(ws, torch.Tensor)
    ascend_ops.mla_decode(q_nope, q_pe, *args[2:], out=out, softmax_lse=lse, workspace=ws)
    torch.testing.assert_close(out[:, :heads].double(), want, atol=3e-2, rtol=3e-2)


def test_decode_heads_and_workspace_on_cpu(backend):
    """CPU backends attend any head count and need no FIA workspace."""
    args, _ = _decode_case(torch.float32, heads=3)
    assert ascend_ops.mla_decode_heads(args[0]) == 3
    assert ascend_ops.mla_decode_workspace(*args) is None
