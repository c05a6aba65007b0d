# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``encoder_attention`` (vision-encoder attention over packed sequences): every CPU backend
against torch's SDPA run per sequence (an independent oracle), the NPU branch through the
simulated NPU (``npu_fused_infer_attention_score`` with unpaged TND K/V, vllm-ascend's
head-dim padding) against both CPU branches, and bad input refused by name."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
import torch.nn.functional as F
from ascend_ops import reference
from ascend_ops.simulator import SimulatedNpuError

TOL = {torch.float32: dict(atol=2e-5, rtol=2e-5), torch.bfloat16: dict(atol=2e-2, rtol=2e-2),
       torch.float16: dict(atol=2e-3, rtol=2e-3)}
#: (sequence lengths, Hq, Hk, D): Qwen2.5-VL-like heads of 80, Qwen3-VL-like 72, GQA, one long
#: sequence crossing the native kernel's 128-row windows, an empty sequence in the batch
CASES = [
    ([5, 9, 3], 4, 4, 80),
    ([16, 1, 7, 11], 4, 2, 64),
    ([140, 6], 2, 2, 72),
    ([4, 0, 12], 8, 1, 128),
]


def problem(lens, hq, hk, d, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = sum(lens)
    q = torch.randn(t, hq, d, generator=g).to(dtype)
    k = torch.randn(t, hk, d, generator=g).to(dtype)
    v = torch.randn(t, hk, d, generator=g).to(dtype)
    cu = torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()], dtype=torch.int32)
    return q, k, v, cu


def sdpa_oracle(q, k, v, cu, scale):
    """torch's scaled_dot_product_attention per sequence (float64, no mask)."""
    out = torch.zeros(q.shape, dtype=torch.float64)
    group = q.shape[1] // k.shape[1]
    bounds = cu.tolist()
    for s, e in zip(bounds, bounds[1:], strict=False):
        if e == s:
            continue
        qs = q[s:e].double().transpose(0, 1)
        ks = k[s:e].double().repeat_interleave(group, 1).transpose(0, 1)
        vs = v[s:e].double().repeat_interleave(group, 1).transpose(0, 1)
        out[s:e] = F.scaled_dot_product_attention(qs, ks, vs, scale=scale).transpose(0, 1)
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("lens,hq,hk,d", CASES)
def test_cpu_backends_match_sdpa_per_sequence(backend, lens, hq, hk, d, dtype):
    q, k, v, cu = problem(lens, hq, hk, d, dtype, seed=d + hq)
    got = ascend_ops.encoder_attention(q, k, v, cu, d ** -0.5)
    assert got.shape == q.shape and got.dtype == dtype
    torch.testing.assert_close(got.double(), sdpa_oracle(q, k, v, cu, d ** -0.5), **TOL[dtype])


def test_sequences_do_not_see_each_other(backend):
    """Changing one sequence's keys leaves the other sequences' outputs bit-identical."""
    q, k, v, cu = problem([6, 10, 4], 2, 2, 64, torch.float32)
    before = ascend_ops.encoder_attention(q, k, v, cu, 0.125)
    k2, v2 = k.clone(), v.clone()
    k2[6:16] += 1.0
    v2[6:16] -= 2.0
    after = ascend_ops.encoder_attention(q, k2, v2, cu, 0.125)
    assert torch.equal(before[:6], after[:6]) and torch.equal(before[16:], after[16:])
    assert not torch.equal(before[6:16], after[6:16])


def test_host_lengths_and_strided_kv(backend):
    """``actual_seq_lengths`` (host ends) gives the same result; K/V may be strided views of a
    packed QKV projection."""
    q, k, v, cu = problem([7, 9], 4, 4, 64, torch.float32)
    qkv = torch.cat((q, k, v), dim=1)  # [T, 3*H, D]
    qv, kv_, vv = qkv[:, :4], qkv[:, 4:8], qkv[:, 8:]
    want = reference.encoder_attention(q, k, v, [7, 16], 0.125)
    torch.testing.assert_close(ascend_ops.encoder_attention(qv, kv_, vv, cu, 0.125), want)
    torch.testing.assert_close(
        ascend_ops.encoder_attention(q, k, v, cu, 0.125, actual_seq_lengths=[7, 16]), want)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("lens,hq,hk,d", CASES)
def test_npu_branch_matches_native_and_reference(simulated_npu, lens, hq, hk, d, dtype):
    q, k, v, cu = problem(lens, hq, hk, d, dtype, seed=3 * d)
    ends = cu[1:].tolist()
    got = ascend_ops.encoder_attention(q, k, v, cu, d ** -0.5, actual_seq_lengths=ends)
    assert ascend_ops.call_counts(per_backend=True).get(("encoder_attention", "npu"), 0) >= 1
    want = reference.encoder_attention(q.double(), k.double(), v.double(), ends, d ** -0.5)
    torch.testing.assert_close(got.double(), want, **TOL[dtype])
    if ascend_ops.native_available():
        from ascend_ops.native import encoder_attention as native

        torch.testing.assert_close(got.float(), native.encoder_attention(q, k, v, cu, d ** -0.5, ends)
                                   .float(), **TOL[dtype])


@pytest.mark.sim_only
def test_npu_branch_pads_head_dim_as_vllm_ascend(simulated_npu, monkeypatch):
    """A head dim of 80 reaches the operator as 128 (vllm-ascend's _maybe_pad_qkv), one launch."""
    from ascend_ops import simulator

    seen = []
    real = simulated_npu.npu_fused_infer_attention_score

    def spy(query, key, value, **kw):
        seen.append((query.shape[-1], key.shape[-1], kw["input_layout"], kw["sparse_mode"],
                     kw.get("block_table")))
        return real(query, key, value, **kw)

    monkeypatch.setattr(simulated_npu, "npu_fused_infer_attention_score", spy)
    q, k, v, cu = problem([5, 9], 4, 4, 80, torch.bfloat16)
    out = ascend_ops.encoder_attention(q, k, v, cu, 80 ** -0.5)
    assert out.shape == (14, 4, 80)
    assert seen == [(128, 128, "TND", 0, None)]
    assert simulator.ledger().launches.get("npu_fused_infer_attention_score") == 1


def test_npu_branch_refuses_float32(simulated_npu):
    q, k, v, cu = problem([3, 4], 2, 2, 64, torch.float32)
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        ascend_ops.encoder_attention(q, k, v, cu, 0.125)


@pytest.mark.sim_only
def test_simulated_fia_checks_unpaged_tnd_lengths(simulated_npu):
    """The simulated operator refuses unpaged TND K/V whose cumulative KV ends are missing or
    run past the keys ([PLUGIN] actual_seq_lengths_kv, constraints/core.py)."""
    q = torch.randn(8, 2, 64, dtype=torch.float16)
    common = dict(num_heads=2, num_key_value_heads=2, input_layout="TND", scale=0.125,
                  sparse_mode=0, actual_seq_lengths=[3, 8])
    with pytest.raises(SimulatedNpuError, match="actual_seq_lengths_kv"):
        simulated_npu.npu_fused_infer_attention_score(q, q, q, **common)
    with pytest.raises(SimulatedNpuError, match="exceeds key's T"):
        simulated_npu.npu_fused_infer_attention_score(q, q, q, actual_seq_lengths_kv=[3, 9], **common)
    with pytest.raises(SimulatedNpuError, match="num_key_value_heads"):
        kv1 = q[:, :1].contiguous()
        simulated_npu.npu_fused_infer_attention_score(q, kv1, kv1, actual_seq_lengths_kv=[3, 8],
                                                     **common)


BAD = [
    (lambda q, k, v, cu: (q.int(), k, v, cu), TypeError, "query"),
    (lambda q, k, v, cu: (q, k.double(), v, cu), TypeError, "key"),
    (lambda q, k, v, cu: (q, k, v[:, :, :32], cu), ValueError, "value"),
    (lambda q, k, v, cu: (q, k[:-1], v[:-1], cu), ValueError, "key"),
    (lambda q, k, v, cu: (q, k[:, :3], v[:, :3], cu), ValueError, "heads"),
    (lambda q, k, v, cu: (q, k, v, cu.float()), TypeError, "cu_seqlens"),
    (lambda q, k, v, cu: (q, k, v, torch.tensor([0, 5, 3], dtype=torch.int32)), ValueError, "cu_seqlens"),
    (lambda q, k, v, cu: (q, k, v, torch.tensor([0, 5], dtype=torch.int32)), ValueError, "cu_seqlens"),
    (lambda q, k, v, cu: (q, k, v, torch.tensor([1, 8], dtype=torch.int32)), ValueError, "cu_seqlens"),
]


@pytest.mark.parametrize("mutate,exc,name", BAD)
def test_bad_input_is_refused_by_name(backend, mutate, exc, name):
    q, k, v, cu = problem([3, 5], 4, 4, 64, torch.float32)
    with pytest.raises(exc, match=name):
        ascend_ops.encoder_attention(*mutate(q, k, v, cu), 0.125)


def test_bad_host_lengths_and_scale_are_refused(backend):
    q, k, v, cu = problem([3, 5], 4, 4, 64, torch.float32)
    with pytest.raises(ValueError, match="actual_seq_lengths"):
        ascend_ops.encoder_attention(q, k, v, cu, 0.125, actual_seq_lengths=[4, 8])
    with pytest.raises(ValueError, match="actual_seq_lengths"):
        ascend_ops.encoder_attention(q, k, v, cu, 0.125, actual_seq_lengths=[8])
    with pytest.raises(ValueError, match="scale"):
        ascend_ops.encoder_attention(q, k, v, cu, 0.0)


def test_registered_op_traces_under_compile():
    q, k, v, cu = problem([3, 5], 2, 2, 64, torch.float32)
    torch.library.opcheck(torch.ops.ascend.encoder_attention.default, (q, k, v, cu, 0.125, [3, 8]))


@pytest.mark.sim_only
def test_npu_branch_with_host_lengths_is_graph_capturable(simulated_npu):
    """With ``actual_seq_lengths`` the NPU branch reads nothing back (vllm-ascend captures its
    ViT attention in ACL graphs): captured once, replayed on new query/key/value contents."""
    q, k, v, cu = problem([5, 9], 4, 4, 64, torch.float16)
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        out = ascend_ops.encoder_attention(q, k, v, cu, 0.125, actual_seq_lengths=[5, 14])
    q2, k2, v2, _ = problem([5, 9], 4, 4, 64, torch.float16, seed=9)
    q.copy_(q2), k.copy_(k2), v.copy_(v2)
    g.replay()
    want = reference.encoder_attention(q.double(), k.double(), v.double(), [5, 14], 0.125)
    torch.testing.assert_close(out.double(), want, **TOL[torch.float16])
