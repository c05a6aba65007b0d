# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Positive conformance: torch_npu / ATB calls that ran on real Atlas A2 / A3 / 300I (310P)
machines, as vllm-project/vllm-ascend makes them, must be accepted by the simulated NPU.

Each ``Pattern`` is one hardware-proven call pattern of an operator our code also calls: the
shapes, dtypes, layouts and keywords of the cited call, scaled down while keeping every property
a constraint looks at (dtype, layout, 128-token blocks, the 512/64 MLA latent/rope widths, a
power-of-two MLA head count, the 2048x2048 int8 causal mask, int32 block tables and slots...).
The builder makes the tensors, calls the operator the way vllm-ascend does and checks what
vllm-ascend then relies on (output shapes and dtypes). ``socs`` are the products the cited code
runs on (vllm-ascend's ``BaseDeviceAdaptor`` serves A2 and A3 alike, ``_310p/`` serves 310P);
each SoC is simulated through ``ASCEND_OPS_SIM_SOC`` (``ascend_ops/simulator/soc.py``).

Citations: ``path@sha:lines`` in vllm-project/vllm-ascend; the SHAs are 182b75e (main,
2026-08-22), f92eadf (releases/v0.13.0), 5cb98ca (v0.23.0), 2f1aed9 (v0.11.0).

A pattern the simulator refuses means the simulator is wrong (the call ran on hardware): such a
pattern carries ``sim_gap`` (why the simulator refuses it) and is a strict xfail on the
simulator, so fixing the simulator turns it into a pass that must lose the mark; with the real
torch_npu (``ASCEND_OPS_SIM_TIER_REAL_NPU=1``, scripts/npu_smoke.sh) every pattern runs plainly.

``REFUSALS`` are calls the operator's kernel source or documentation rejects; the simulator must
refuse them too (they are simulator-only checks: on a device the error type and process state
after a rejected launch differ).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch

A2_A3 = ("A2", "A3")
VA = "vllm-project/vllm-ascend"
OP = "Ascend/op-plugin"  # its own NPU tests (@SupportedDevices(['Ascend910B']))
REAL_NPU = os.environ.get("ASCEND_OPS_SIM_TIER_REAL_NPU") == "1"


@dataclass(frozen=True)
class Pattern:
    name: str
    op: str
    socs: tuple[str, ...]
    cite: str
    run: Callable  # (torch_npu, device) -> None; builds tensors, calls, checks the outputs
    sim_gap: str | None = None


@dataclass(frozen=True)
class Refusal:
    name: str
    op: str
    soc: str
    source: str
    run: Callable  # (torch_npu, device) -> None; must raise
    match: str


def _g(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _randn(dev, *shape, dtype=torch.bfloat16, seed=0):
    return torch.randn(*shape, generator=_g(seed)).to(dtype).to(dev)


def _causal_mask_2048(dev):
    # vllm_ascend/attention/attention_mask.py@182b75e:50-55: triu(ones(2048, 2048), 1) as int8
    return torch.triu(torch.ones(2048, 2048), diagonal=1).to(torch.int8).to(dev)


# ---------------------------------------------------------------- norm / activation

def _rms_norm(tnpu, dev):
    x, w = _randn(dev, 4, 256), _randn(dev, 256, seed=1)
    y, _rstd = tnpu.npu_rms_norm(x, w, 1e-6)  # eps positional
    assert y.shape == x.shape and y.dtype == x.dtype


def _add_rms_norm(tnpu, dev):
    x, res, w = _randn(dev, 4, 256), _randn(dev, 4, 256, seed=1), _randn(dev, 256, seed=2)
    y, _rstd, new_res = tnpu.npu_add_rms_norm(x, res, w, 1e-6)
    assert y.shape == x.shape and new_res.shape == x.shape
    torch.testing.assert_close(new_res.float().cpu(), (x.float() + res.float()).cpu(), atol=2e-2, rtol=2e-2)


def _swiglu(tnpu, dev):
    out = tnpu.npu_swiglu(_randn(dev, 4, 2 * 128))  # [..., 2I] (gate, up) -> [..., I]
    assert out.shape == (4, 128) and out.dtype == torch.bfloat16


# ---------------------------------------------------------------- rotary embedding

def _mrope_rope(tnpu, dev):
    t, hs = 5, 128
    positions = torch.tensor([0, 3, 7, 1, 2], dtype=torch.int64, device=dev)
    q, k = _randn(dev, t, 4 * hs), _randn(dev, t, 1 * hs, seed=1)
    table = _randn(dev, 16, hs, seed=2)  # [max_pos, rotary_dim] in the model dtype
    qo, ko = tnpu.npu_mrope(positions, q.contiguous().view(t, -1), k.contiguous().view(t, -1), table, hs,
                            mrope_section=[0, 0, 0], rotary_mode="half", cache_mode="default")
    assert qo.shape == q.shape and ko.shape == k.shape and qo.dtype == q.dtype


def _mrope_rope_interleave(tnpu, dev):
    t, hs = 8, 128
    positions = torch.arange(t, dtype=torch.int64, device=dev)
    q, k = _randn(dev, t, 8 * hs, dtype=torch.float16), _randn(dev, t, 8 * hs, dtype=torch.float16, seed=1)
    qo, ko = tnpu.npu_mrope(positions, q, k, _randn(dev, 16, hs, dtype=torch.float16, seed=2), hs,
                            mrope_section=[0, 0, 0], rotary_mode="interleave", cache_mode="default")
    assert qo.shape == q.shape and ko.shape == k.shape


def _vit_fia_unpaged_tnd(tnpu, dev):
    # AscendMMEncoderAttention._run_vit_fia (vllm_ascend/ops/mm_encoder_attention.py@182b75e):
    # Qwen2.5-VL vision heads (head dim 80 zero-padded to 128), packed TND q/k/v, no block table,
    # sparse_mode 0 without a mask, both length lists cu_seqlens[1:] (cumulative)
    t, n = 12, 16
    q, k, v = (_randn(dev, t, n, 128, seed=s) for s in range(3))
    ends = [5, 12]
    out, _ = tnpu.npu_fused_infer_attention_score(
        query=q, key=k, value=v, atten_mask=None, block_table=None, input_layout="TND",
        block_size=128, actual_seq_lengths=ends, actual_seq_lengths_kv=ends,
        num_key_value_heads=n, num_heads=n, scale=80 ** -0.5, sparse_mode=0,
        pre_tokens=2147483647, next_tokens=2147483647)
    assert out.shape == q.shape and out.dtype == q.dtype


def _mrope_mrope(tnpu, dev):
    t, hs = 3, 128
    positions = torch.tensor([[0, 1, 2], [0, 1, 1], [0, 2, 2]], dtype=torch.int64, device=dev)
    q, k = _randn(dev, t, 2 * hs), _randn(dev, t, 1 * hs, seed=1)
    qo, ko = tnpu.npu_mrope(positions.contiguous(), q.contiguous(), k.contiguous(), _randn(dev, 8, hs, seed=2),
                            hs, mrope_section=[16, 24, 24], rotary_mode="half")
    assert qo.shape == q.shape and ko.shape == k.shape


def _atb_rope(dtype, hs, rot, head_arg, neox=True, table_dtype=None):
    def run(tnpu, dev):
        t = 4
        positions = torch.tensor([0, 5, 2, 9], dtype=torch.int64, device=dev)
        q = _randn(dev, t, 2, hs, dtype=dtype)
        k = _randn(dev, t, 1, hs, dtype=dtype, seed=1)
        q_rot = q[..., :rot].contiguous().view(t, -1)
        k_rot = k[..., :rot].contiguous().view(t, -1)
        before = q_rot.clone()
        table = _randn(dev, 16, rot, dtype=table_dtype or dtype, seed=2)
        tnpu._npu_rotary_embedding(positions, q_rot, k_rot, head_arg, table, neox)
        assert q_rot.shape == (t, 2 * rot) and not torch.equal(q_rot.cpu(), before.cpu())  # in place
    return run


# ---------------------------------------------------------------- KV cache write

def _reshape_and_cache(dtype):
    def run(tnpu, dev):
        nb, bs, nkv, d = 3, 128, 2, 128
        kc = torch.zeros(nb, bs, nkv, d, dtype=dtype, device=dev)
        vc = torch.zeros(nb, bs, nkv, d, dtype=dtype, device=dev)
        key, value = _randn(dev, 3, nkv, d, dtype=dtype), _randn(dev, 3, nkv, d, dtype=dtype, seed=1)
        slots = torch.tensor([5, 130, 300], dtype=torch.int32, device=dev)
        tnpu._npu_reshape_and_cache(key=key[:3], value=value[:3], key_cache=kc, value_cache=vc,
                                    slot_indices=slots)
        torch.testing.assert_close(kc[1, 2].cpu(), key[1].cpu(), atol=0, rtol=0)
        torch.testing.assert_close(vc[2, 300 - 256].cpu(), value[2].cpu(), atol=0, rtol=0)
    return run


# ---------------------------------------------------------------- dense FIA (attention_v1.py)

def _dense_fia_kwargs(dev, q_lens, kv_lens, causal=True, n=8, nkv=2, d=128, bs=128):
    """vllm_ascend/attention/attention_v1.py@182b75e:1447-1470 (+ device/device_op.py:56-101): TND
    query, 3-D paged caches [num_blocks, block_size, N_kv*D], cumulative q ends, per-request
    kv lengths, 128-token blocks, int8 2048x2048 mask with sparse_mode=3 (causal) or no mask
    with sparse_mode=0 (attention_v1.py:1402-1416)."""
    t = sum(q_lens)
    blocks = [-(-kv // bs) for kv in kv_lens]
    nb = sum(blocks) + 1
    table = torch.zeros(len(q_lens), max(blocks + [1]), dtype=torch.int32)
    used = 1
    for i, nblk in enumerate(blocks):
        table[i, :nblk] = torch.arange(used, used + nblk, dtype=torch.int32)
        used += nblk
    key_cache = _randn(dev, nb, bs, nkv, d, seed=3)
    value_cache = _randn(dev, nb, bs, nkv, d, seed=4)
    ends = torch.tensor(q_lens).cumsum(0).tolist()
    kw = dict(query=_randn(dev, t, n, d, seed=5), key=key_cache.view(nb, bs, -1).contiguous(),
              value=value_cache.view(nb, bs, -1).contiguous(), block_table=table.to(dev), input_layout="TND",
              block_size=bs, actual_seq_lengths=ends, actual_seq_lengths_kv=list(kv_lens),
              num_key_value_heads=nkv, num_heads=n, scale=d ** -0.5)
    if causal:
        kw.update(atten_mask=_causal_mask_2048(dev), sparse_mode=3)
    else:
        kw.update(sparse_mode=0)
    return kw


def _dense_fia(q_lens, kv_lens, causal=True):
    def run(tnpu, dev):
        kw = _dense_fia_kwargs(dev, q_lens, kv_lens, causal)
        out, _lse = tnpu.npu_fused_infer_attention_score(**kw)
        t, n, d = kw["query"].shape
        assert out.view(t, n, d).dtype == torch.bfloat16
    return run


def _dense_fia_out(tnpu, dev):
    # capture path: attention_v1.py@182b75e:966-1021 (workspace from the same kwargs, once per
    # num_tokens), 1061-1081 (.out, all keywords, out=[output, softmax_lse]); softmax_lse is a
    # 1-element placeholder in the query dtype (attention_v1.py:938)
    kw = _dense_fia_kwargs(dev, [1, 1, 1], [130, 7, 1])
    workspace = tnpu._npu_fused_infer_attention_score_get_max_workspace(**kw)
    output = torch.empty_like(kw["query"])
    softmax_lse = torch.empty(1, dtype=kw["query"].dtype, device=dev)
    tnpu.npu_fused_infer_attention_score.out(**kw, workspace=workspace, out=[output, softmax_lse])
    expect, _ = tnpu.npu_fused_infer_attention_score(**kw)
    torch.testing.assert_close(output.cpu(), expect.cpu())


# ---------------------------------------------------------------- MLA FIA (mla_v1.py, FIA v1)

def _mla_kwargs(dev, layout, b=2, n=16, kv_lens=(130, 9), bs=128, lora=512, rope=64):
    """vllm_ascend/attention/mla_v1.py@f92eadf:1152-1289: q/k/v positional (the latent cache as
    key and value), caches viewed [num_blocks, N_kv=1, block_size, D], query_rope/key_rope,
    antiquant_mode=0, antiquant_scale=None, 128-token blocks. BNSD_NBSD: q [B, N, 1, 512],
    sparse_mode=0, no mask, actual_seq_lengths=None; TND_NTD (speculative decoding): q [T, N, 512],
    sparse_mode=3 with the 2048 mask, cumulative actual_seq_lengths."""
    blocks = [-(-kv // bs) for kv in kv_lens]
    nb = sum(blocks) + 1
    table = torch.zeros(b, max(blocks), dtype=torch.int32)
    used = 1
    for i, nblk in enumerate(blocks):
        table[i, :nblk] = torch.arange(used, used + nblk, dtype=torch.int32)
        used += nblk
    k_nope = _randn(dev, nb * bs, lora, seed=6).view(-1, 1, bs, lora)
    k_pe = _randn(dev, nb * bs, rope, seed=7).view(-1, 1, bs, rope)
    if layout == "BNSD_NBSD":
        q_nope, q_pe = _randn(dev, b, n, 1, lora, seed=8), _randn(dev, b, n, 1, rope, seed=9)
        extra = dict(atten_mask=None, sparse_mode=0, actual_seq_lengths=None)
    else:  # TND_NTD, one query token per request here
        q_nope, q_pe = _randn(dev, b, n, lora, seed=8), _randn(dev, b, n, rope, seed=9)
        extra = dict(atten_mask=_causal_mask_2048(dev), sparse_mode=3, actual_seq_lengths=list(range(1, b + 1)))
    kw = dict(query_rope=q_pe, key_rope=k_pe, num_heads=n, num_key_value_heads=1, input_layout=layout,
              scale=0.1, antiquant_mode=0, antiquant_scale=None, block_table=table.to(dev), block_size=bs,
              actual_seq_lengths_kv=list(kv_lens), **extra)
    return q_nope, k_nope, kw


def _mla_fia(layout):
    def run(tnpu, dev):
        q_nope, k_nope, kw = _mla_kwargs(dev, layout)
        out, _ = tnpu.npu_fused_infer_attention_score(q_nope, k_nope, k_nope, **kw)
        n, b = kw["num_heads"], q_nope.shape[0]
        # output layout NBSD / NTD: (N, B, 1, 512) / (N, T, 512) (mla_v1.py@f92eadf:1195-1211)
        assert tuple(out.shape) == ((n, b, 1, 512) if layout == "BNSD_NBSD" else (n, b, 512))
        # the second half only reorders the output (op-plugin FusedInferAttentionScoreKernelNpuOpApi.cpp
        # @517f2e7:209-280): the query-layout call's result, permuted
        same, _ = tnpu.npu_fused_infer_attention_score(q_nope, k_nope, k_nope,
                                                       **{**kw, "input_layout": layout.split("_")[0]})
        expect = same.permute(1, 0, 2, 3) if layout == "BNSD_NBSD" else same.transpose(0, 1)
        torch.testing.assert_close(out.cpu(), expect.cpu())
    return run


def _mla_fia_out(tnpu, dev):
    # mla_v1.py@f92eadf:1237-1281: workspace from the same args, out=[attn_output (N, B, 1, 512),
    # softmax_lse = empty(num_tokens) in the query dtype]
    q_nope, k_nope, kw = _mla_kwargs(dev, "BNSD_NBSD")
    workspace = tnpu._npu_fused_infer_attention_score_get_max_workspace(q_nope, k_nope, k_nope, **kw)
    out = torch.empty(16, 2, 1, 512, dtype=q_nope.dtype, device=dev)
    lse = torch.empty(2, dtype=q_nope.dtype, device=dev)
    tnpu.npu_fused_infer_attention_score.out(q_nope, k_nope, k_nope, **kw, workspace=workspace, out=[out, lse])
    assert torch.isfinite(out.float()).all()


# ---------------------------------------------------------------- MoE

def _gating_top_k(tnpu, dev):
    # DeepSeek-V3 shape: 256 experts, 8 groups, top-4 groups, top-8 experts, sigmoid + bias
    x = _randn(dev, 3, 256)
    bias = _randn(dev, 256, seed=1)
    w, ids, _out = tnpu.npu_moe_gating_top_k(x, k=8, bias=bias, k_group=4, group_count=8, group_select_mode=1,
                                             renorm=0, norm_type=1, routed_scaling_factor=1, eps=1e-20)
    assert tuple(w.shape) == (3, 8) and tuple(ids.shape) == (3, 8)
    assert ids.to(torch.int32).max() < 256


def _routing(tnpu, dev, t=4, k=2, e=8, h=64, dtype=torch.bfloat16):
    x = _randn(dev, t, h, dtype=dtype)
    ids = torch.tensor([[0, 3], [3, 5], [7, 0], [2, 3]], dtype=torch.int32, device=dev)
    return x, ids, t, k, e


def _init_routing_v2_allgather(tnpu, dev):
    x, ids, t, k, e = _routing(tnpu, dev)
    rows, row_idx, expert_tokens, _scale = tnpu.npu_moe_init_routing_v2(
        x, ids, scale=None, active_num=t * k, expert_num=e, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, e], quant_mode=-1)
    assert tuple(rows.shape) == (t * k, x.shape[1]) and row_idx.numel() == t * k
    counts = expert_tokens.to(torch.int64)  # group_list, group_list_type=1 (count)
    assert counts.sum().item() == t * k


def _init_routing_v2_310p(tnpu, dev):
    x, ids, t, k, e = _routing(tnpu, dev, dtype=torch.float16)
    rows, _row_idx, _tokens, _ = tnpu.npu_moe_init_routing_v2(
        x, ids, active_num=t * k, expert_num=e, drop_pad_mode=0, active_expert_range=[0, e], quant_mode=-1,
        row_idx_type=0)
    assert tuple(rows.shape) == (t * k, x.shape[1])


def _unpermute(tnpu, dev):
    x, ids, t, k, e = _routing(tnpu, dev)
    rows, row_idx, _, _ = tnpu.npu_moe_init_routing_v2(
        x, ids, scale=None, active_num=t * k, expert_num=e, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, e], quant_mode=-1)
    weights = torch.rand(t, k, generator=_g(3)).to(torch.bfloat16).to(dev)
    out = tnpu.npu_moe_token_unpermute(permuted_tokens=rows, sorted_indices=torch.abs(row_idx), probs=weights)
    assert tuple(out.shape) == (t, x.shape[1])


def _counts(dev):
    return torch.tensor([2, 0, 1, 3], dtype=torch.int64, device=dev)  # 4 experts, 6 rows


def _gmm_unquant(tnpu, dev):
    # w1 stored [E, 2I, H], transposed(1, 2) to [E, H, 2I] (a view) before the call
    h, i2 = 64, 2 * 32
    w1 = _randn(dev, 4, i2, h, seed=1).transpose(1, 2)
    w2 = _randn(dev, 4, h, i2 // 2, seed=2).transpose(1, 2)
    x = _randn(dev, 6, h)
    gate_up = tnpu.npu_grouped_matmul(x=[x], weight=[w1], split_item=2, group_list_type=1, group_type=0,
                                      group_list=_counts(dev))[0]
    act = tnpu.npu_swiglu(gate_up)
    out = tnpu.npu_grouped_matmul(x=[act], weight=[w2], split_item=2, group_list_type=1, group_type=0,
                                  group_list=_counts(dev))[0]
    assert tuple(out.shape) == (6, h) and out.dtype == torch.bfloat16


def _int8(dev, *shape, seed=0):
    return torch.randint(-8, 8, shape, generator=_g(seed), dtype=torch.int8).to(dev)


def _gmm_w8a8_dynamic(tnpu, dev):
    # w13/w2 int8 [E, out, in] transposed(1, 2).contiguous() (w8a8_dynamic.py@2f1aed9:270-285),
    # weight scales [E, out] in the params dtype; w1's cast to w2_scale's dtype for the call
    h, i2 = 64, 64
    w1, w2 = _int8(dev, 4, i2, h, seed=1).transpose(1, 2).contiguous(), _int8(dev, 4, h, i2 // 2,
                                                                                seed=2).transpose(1, 2).contiguous()
    w1_scale = torch.rand(4, i2, generator=_g(3)).to(torch.float32).to(dev)  # passed .to(float32)
    w2_scale = torch.rand(4, h, generator=_g(4)).to(torch.bfloat16).to(dev)
    q, pts = tnpu.npu_dynamic_quant(_randn(dev, 6, h))
    gate_up = tnpu.npu_grouped_matmul(x=[q], weight=[w1], scale=[w1_scale.to(w2_scale.dtype)], bias=None,
                                      per_token_scale=[pts], split_item=2, group_list_type=1, group_type=0,
                                      group_list=_counts(dev), output_dtype=w2_scale.dtype)[0]
    act = tnpu.npu_swiglu(gate_up)
    q2, pts2 = tnpu.npu_dynamic_quant(act)
    out = tnpu.npu_grouped_matmul(x=[q2], weight=[w2], scale=[w2_scale], bias=None, per_token_scale=[pts2],
                                  split_item=2, group_list_type=1, group_type=0, group_list=_counts(dev),
                                  output_dtype=w2_scale.dtype)[0]
    assert tuple(out.shape) == (6, h) and out.dtype == torch.bfloat16


def _gmm_w8a8_mc2_int32(tnpu, dev):
    h, i2 = 64, 64
    w1 = _int8(dev, 4, i2, h, seed=1).transpose(1, 2).contiguous()
    q, _pts = tnpu.npu_dynamic_quant(_randn(dev, 6, h))
    out = tnpu.npu_grouped_matmul(x=[q], weight=[w1], split_item=3, group_list_type=1, group_type=0,
                                  group_list=_counts(dev), output_dtype=torch.int32)[0]
    assert tuple(out.shape) == (6, i2) and out.dtype == torch.int32
    # the raw int8 x int8 accumulator per group (rows 0-1 expert 0, row 2 expert 2, rows 3-5 expert 3)
    rows = torch.tensor([0, 0, 2, 3, 3, 3])
    expect = torch.einsum("mk,mkn->mn", q.cpu().long(), w1.cpu().long()[rows]).to(torch.int32)
    torch.testing.assert_close(out.cpu(), expect)


# ---------------------------------------------------------------- int8 linear

def _dynamic_quant(dst_type):
    def run(tnpu, dev):
        x = _randn(dev, 5, 64)
        q, scale = tnpu.npu_dynamic_quant(x) if dst_type is None else tnpu.npu_dynamic_quant(x, dst_type=dst_type)
        assert q.dtype == torch.int8 and q.shape == x.shape
        assert scale.dtype == torch.float32 and scale.numel() == 5
    return run


def _quant_matmul_dynamic(tnpu, dev):
    # weight [K, N] (transposed at load), weight_scale flattened [N] in the params dtype
    q, pts = tnpu.npu_dynamic_quant(_randn(dev, 5, 64))
    w = _int8(dev, 32, 64, seed=1).t().contiguous()
    scale = torch.rand(32, generator=_g(2)).to(torch.bfloat16).to(dev)
    out = tnpu.npu_quant_matmul(q, w, scale, pertoken_scale=pts, bias=None, output_dtype=torch.bfloat16)
    assert tuple(out.shape) == (5, 32) and out.dtype == torch.bfloat16


def _quant_matmul_static(params_dtype):
    def run(tnpu, dev):
        # deq_scale float32 for bfloat16 models, int64 for float16 models; quant_bias int32 [N]
        x, w = _int8(dev, 5, 64), _int8(dev, 32, 64, seed=1).t().contiguous()
        if params_dtype == torch.bfloat16:
            deq = torch.rand(32, generator=_g(2)).to(dev)
        else:  # int64 carrying float32 bit patterns in the low word (torch_npu.npu_trans_quant_param)
            deq = (torch.rand(32, generator=_g(2)) * 1e-2).view(torch.int32).to(torch.int64).to(dev)
        bias = torch.randint(-4, 4, (32,), generator=_g(3), dtype=torch.int32).to(dev)
        out = tnpu.npu_quant_matmul(x, w, deq, bias=bias, output_dtype=params_dtype)
        assert tuple(out.shape) == (5, 32) and out.dtype == params_dtype
    return run


def _quantize(tnpu, dev):
    # input_scale [1] repeated to K, its reciprocal; input_offset int8 [1] repeated, cast to the
    # scale's dtype (w8a8_static.py@182b75e:120-131); positional (qint8, axis=-1, div_mode=False)
    k = 64
    scale = torch.full((k,), 0.05).to(torch.bfloat16).to(dev)
    offset = torch.zeros(k, dtype=torch.int8).to(torch.bfloat16).to(dev)
    out = tnpu.npu_quantize(_randn(dev, 5, k), 1 / scale, offset, torch.qint8, -1, False)
    assert out.shape == (5, k) and out.dtype == torch.int8


# ---------------------------------------------------------------- DeepSeek-V3.2 sparse attention

def _lightning_indexer(tnpu, dev):
    # BaseDeviceAdaptor.indexer_select_post_process (device_op.py@182b75e:495-507; sfa_v1.py@182b75e:
    # 1203-1269, 361-368): TND q_li [T, 64, 128], PA_BSND indexer key cache of 128-token blocks,
    # weights [T, 64] in the activation dtype, int32 cumulative query ends / key lengths and block
    # table, sparse_count 2048, sparse_mode 3; the indices read back are logical positions
    t, n = 3, 64
    idx, _values = tnpu.npu_lightning_indexer(
        query=_randn(dev, t, n, 128), key=_randn(dev, 4, 128, 1, 128, seed=1), weights=_randn(dev, t, n, seed=2),
        actual_seq_lengths_query=torch.tensor([1, 3], dtype=torch.int32, device=dev),
        actual_seq_lengths_key=torch.tensor([130, 200], dtype=torch.int32, device=dev),
        block_table=torch.tensor([[0, 1], [2, 3]], dtype=torch.int32, device=dev),
        layout_query="TND", layout_key="PA_BSND", sparse_count=2048, sparse_mode=3)
    assert idx.shape == (t, 1, 2048) and idx.dtype == torch.int32
    idx = idx.cpu()
    for row, visible in ((0, 130), (1, 199), (2, 200)):  # causal: kv_len - q_len + i + 1 keys
        assert sorted(idx[row, 0, :visible].tolist()) == list(range(visible))
        assert (idx[row, 0, visible:] == -1).all()


PATTERNS = [
    Pattern("rms_norm", "npu_rms_norm", A2_A3, f"{VA} vllm_ascend/ops/layernorm.py@182b75e:81", _rms_norm),
    Pattern("add_rms_norm", "npu_add_rms_norm", A2_A3, f"{VA} vllm_ascend/ops/layernorm.py@182b75e:70-79",
            _add_rms_norm),
    Pattern("swiglu", "npu_swiglu", A2_A3,
            f"{VA} vllm_ascend/ops/activation.py@182b75e:35-38; ops/fused_moe/moe_mlp.py@182b75e:410", _swiglu),
    Pattern("mrope_rope_mode_neox", "npu_mrope", ("A2",),
            f"{VA} vllm_ascend/ops/rotary_embedding.py@182b75e:155-193 (commit dde6c59: verified on Ascend910B)",
            _mrope_rope),
    Pattern("mrope_mrope_mode_16_24_24", "npu_mrope", A2_A3,
            f"{VA} vllm_ascend/ops/rotary_embedding.py@182b75e:497-534", _mrope_mrope),
    Pattern("vit_fia_unpaged_tnd", "npu_fused_infer_attention_score", A2_A3,
            f"{VA} vllm_ascend/ops/mm_encoder_attention.py@182b75e (_run_vit_fia, _maybe_pad_qkv)",
            _vit_fia_unpaged_tnd),
    Pattern("mrope_rope_mode_interleave_fp16", "npu_mrope", ("A2",),
            f"{OP} test/test_custom_ops/test_npu_mrope.py@517f2e7 (test_npu_mrope_rope, Ascend910B)",
            _mrope_rope_interleave),
    Pattern("atb_rope_fp32_table_high_precision", "_npu_rotary_embedding", ("A2",),
            f"{OP} test/test_custom_ops/test_atb_rope.py@517f2e7:60-72 (Ascend910B: fp16 q/k, fp32 table, GPT-J)",
            _atb_rope(torch.float16, 128, 128, 128, neox=False, table_dtype=torch.float32)),
    Pattern("atb_rope_partial_gptj_rotary_dim_arg", "_npu_rotary_embedding", ("A2",),
            f"{VA} commit 4230bc86 (#6310, fixes #6060 on 910B1): rotary slice, 4th arg rotary_dim",
            _atb_rope(torch.bfloat16, 128, 64, 64, neox=False)),
    Pattern("atb_rope_full_bf16", "_npu_rotary_embedding", A2_A3,
            f"{VA} vllm_ascend/ops/rotary_embedding.py@2f1aed9:97-108", _atb_rope(torch.bfloat16, 128, 128, 128)),
    Pattern("atb_rope_partial_head_size_arg", "_npu_rotary_embedding", A2_A3,
            f"{VA} vllm_ascend/ops/rotary_embedding.py@2f1aed9:74-95 (rotary slice, 4th arg head_size)",
            _atb_rope(torch.bfloat16, 128, 64, 128)),
    Pattern("atb_rope_full_fp16_310p", "_npu_rotary_embedding", ("310P",),
            f"{VA} vllm_ascend/_310p/ops/rotary_embedding.py@182b75e:175-184",
            _atb_rope(torch.float16, 128, 128, 128)),
    Pattern("atb_rope_partial_rotary_dim_arg_310p", "_npu_rotary_embedding", ("310P",),
            f"{VA} vllm_ascend/_310p/ops/rotary_embedding.py@182b75e:147-173 (rotary_dim 32 path, 4th arg rotary_dim)",
            _atb_rope(torch.float16, 128, 32, 32)),
    Pattern("reshape_and_cache_keywords", "_npu_reshape_and_cache", A2_A3,
            f"{VA} vllm_ascend/device/device_op.py@5cb98ca:50-52; int32 slots: worker/block_table.py@5cb98ca:100-103",
            _reshape_and_cache(torch.bfloat16)),
    Pattern("reshape_and_cache_310p", "_npu_reshape_and_cache", ("310P",),
            f"{VA} vllm_ascend/device/device_op.py@182b75e:1841-1850", _reshape_and_cache(torch.float16)),
    Pattern("fia_tnd_causal_chunked_prefill", "npu_fused_infer_attention_score", A2_A3,
            f"{VA} vllm_ascend/attention/attention_v1.py@182b75e:1307-1338,1447-1470",
            _dense_fia([3, 1, 2], [131, 20, 2])),
    Pattern("fia_tnd_decode_with_padded_dummy_request", "npu_fused_infer_attention_score", A2_A3,
            f"{VA} vllm_ascend/attention/attention_v1.py@182b75e:349-380 (dummy: seq_len 1, zero table row)",
            _dense_fia([1, 1, 1], [129, 40, 1])),
    Pattern("fia_tnd_non_causal", "npu_fused_infer_attention_score", A2_A3,
            f"{VA} vllm_ascend/attention/attention_v1.py@182b75e:1402-1416", _dense_fia([2, 1], [2, 60], causal=False)),
    Pattern("fia_out_with_max_workspace", "npu_fused_infer_attention_score.out", A2_A3,
            f"{VA} vllm_ascend/attention/attention_v1.py@182b75e:938,966-1021,1061-1081", _dense_fia_out),
    Pattern("mla_fia_bnsd_nbsd_decode", "npu_fused_infer_attention_score", A2_A3,
            f"{VA} vllm_ascend/attention/mla_v1.py@f92eadf:1152-1289", _mla_fia("BNSD_NBSD")),
    Pattern("mla_fia_tnd_ntd_spec_decode", "npu_fused_infer_attention_score", A2_A3,
            f"{VA} vllm_ascend/attention/mla_v1.py@f92eadf:1184-1199,1216-1231", _mla_fia("TND_NTD")),
    Pattern("mla_fia_out_with_max_workspace", "npu_fused_infer_attention_score.out", A2_A3,
            f"{VA} vllm_ascend/attention/mla_v1.py@f92eadf:1237-1281", _mla_fia_out),
    Pattern("gating_top_k_deepseek_v3", "npu_moe_gating_top_k", A2_A3,
            f"{VA} vllm_ascend/ops/moe/experts_selector.py@2f1aed9:180-197", _gating_top_k),
    Pattern("init_routing_v2_allgather", "npu_moe_init_routing_v2", A2_A3,
            f"{VA} vllm_ascend/ops/fused_moe/token_dispatcher.py@182b75e:424-437", _init_routing_v2_allgather),
    Pattern("init_routing_v2_310p", "npu_moe_init_routing_v2", ("310P",),
            f"{VA} vllm_ascend/_310p/fused_moe/token_dispatcher.py@182b75e:63-77", _init_routing_v2_310p),
    Pattern("token_unpermute_abs_row_idx", "npu_moe_token_unpermute", A2_A3,
            f"{VA} vllm_ascend/ops/fused_moe/token_dispatcher.py@182b75e:451-456; device/device_op.py@182b75e:950-954",
            _unpermute),
    Pattern("grouped_matmul_unquant_swiglu", "npu_grouped_matmul", A2_A3,
            f"{VA} vllm_ascend/ops/moe/moe_mlp.py@2f1aed9:195-230", _gmm_unquant),
    Pattern("grouped_matmul_w8a8_dynamic_allgather", "npu_grouped_matmul", A2_A3,
            f"{VA} vllm_ascend/ops/moe/moe_mlp.py@2f1aed9:75-86,159-187; quantization/w8a8_dynamic.py@2f1aed9:250-256",
            _gmm_w8a8_dynamic),
    Pattern("grouped_matmul_w8a8_mc2_int32_out", "npu_grouped_matmul", A2_A3,
            f"{VA} vllm_ascend/ops/moe/moe_mlp.py@2f1aed9:104-114", _gmm_w8a8_mc2_int32),
    Pattern("dynamic_quant_default", "npu_dynamic_quant", A2_A3,
            f"{VA} vllm_ascend/quantization/w8a8_dynamic.py@2f1aed9:82", _dynamic_quant(None)),
    Pattern("dynamic_quant_dst_int8", "npu_dynamic_quant", A2_A3,
            f"{VA} vllm_ascend/quantization/methods/w8a8_dynamic.py@182b75e:59,92-97", _dynamic_quant(torch.int8)),
    Pattern("quant_matmul_w8a8_dynamic", "npu_quant_matmul", A2_A3,
            f"{VA} vllm_ascend/quantization/w8a8_dynamic.py@2f1aed9:92-99", _quant_matmul_dynamic),
    Pattern("quant_matmul_w8a8_static_bf16", "npu_quant_matmul", A2_A3,
            f"{VA} vllm_ascend/quantization/methods/w8a8_static.py@182b75e:79-86,113-119",
            _quant_matmul_static(torch.bfloat16)),
    Pattern("quant_matmul_w8a8_static_fp16", "npu_quant_matmul", A2_A3,
            f"{VA} vllm_ascend/quantization/methods/w8a8_static.py@182b75e:79-86,113-119",
            _quant_matmul_static(torch.float16)),
    Pattern("quantize_positional", "npu_quantize", A2_A3,
            f"{VA} vllm_ascend/ops/register_custom_ops.py@182b75e:138-146", _quantize),
    Pattern("lightning_indexer_tnd_pa_bsnd", "npu_lightning_indexer", A2_A3,
            f"{VA} vllm_ascend/device/device_op.py@182b75e:495-507 (glm_moe_dsa on BaseDeviceAdaptor)",
            _lightning_indexer),
]


# ---------------------------------------------------------------- refusals

def _mla_six_heads(tnpu, dev):
    # the decode call above with 6 query heads, in the BNSD layout (query [B, N, 1, 512])
    q_nope, k_nope, kw = _mla_kwargs(dev, "BNSD_NBSD", n=6)
    tnpu.npu_fused_infer_attention_score(q_nope, k_nope, k_nope, **{**kw, "input_layout": "BNSD"})


def _mrope_mode(mode, section=(0, 0, 0)):
    def run(tnpu, dev):
        t, hs = 2, 128
        positions = torch.zeros(t if not any(section) else (len(section), t), dtype=torch.int64, device=dev)
        tnpu.npu_mrope(positions, _randn(dev, t, hs), _randn(dev, t, hs), _randn(dev, 8, hs), hs,
                       mrope_section=list(section), rotary_mode=mode)
    return run


def _v1_routing_on_a3(tnpu, dev):
    x, ids, t, k, _e = _routing(tnpu, dev)
    row_idx = torch.arange(t * k, dtype=torch.int32, device=dev).view(k, -1).permute(1, 0).contiguous()
    tnpu.npu_moe_init_routing(x, row_idx=row_idx, expert_idx=ids, active_num=t)


def _fia_sparse3_without_mask(tnpu, dev):
    kw = _dense_fia_kwargs(dev, [2], [2])
    kw.pop("atten_mask")
    tnpu.npu_fused_infer_attention_score(**kw)


def _reshape_and_cache_int64_slots(tnpu, dev):
    kc = torch.zeros(2, 128, 1, 64, dtype=torch.bfloat16, device=dev)
    tnpu._npu_reshape_and_cache(key=_randn(dev, 2, 1, 64), value=_randn(dev, 2, 1, 64), key_cache=kc,
                                value_cache=kc.clone(), slot_indices=torch.tensor([0, 1], device=dev))


def _sfa_default_attention_mode(tnpu, dev):
    # the schema's default attention_mode=0 (torch-npu 2.13.0 npu_native_functions_by_codegen.yaml)
    t, n = 2, 4
    kv = _randn(dev, 2, 16, 1, 512, seed=1)
    tnpu.npu_sparse_flash_attention(
        _randn(dev, t, n, 512), kv, kv, torch.zeros(t, 1, 4, dtype=torch.int32, device=dev), 0.1,
        block_table=torch.tensor([[0, 1]], dtype=torch.int32, device=dev),
        actual_seq_lengths_query=torch.tensor([t], dtype=torch.int32, device=dev),
        actual_seq_lengths_kv=torch.tensor([20], dtype=torch.int32, device=dev),
        query_rope=_randn(dev, t, n, 64, seed=2), key_rope=_randn(dev, 2, 16, 1, 64, seed=3),
        layout_query="TND", layout_kv="PA_BSND")


def _indexer_128_heads(tnpu, dev):
    tnpu.npu_lightning_indexer(
        _randn(dev, 1, 128, 128), _randn(dev, 1, 16, 1, 128, seed=1), _randn(dev, 1, 128, seed=2),
        actual_seq_lengths_query=torch.tensor([1], dtype=torch.int32, device=dev),
        actual_seq_lengths_key=torch.tensor([5], dtype=torch.int32, device=dev),
        block_table=torch.zeros(1, 1, dtype=torch.int32, device=dev), layout_query="TND", layout_key="PA_BSND")


_FIA_MD = "Ascend/op-plugin@517f2e7 docs/zh/custom_APIs/torch_npu/torch_npu-npu_fused_infer_attention_score.md"
_MROPE_SRC = "Ascend/op-plugin@517f2e7 op_plugin/ops/opapi/RopeWithSinCosCacheKernelNpuOpApi.cpp:20-26"

REFUSALS = [
    Refusal("atb_rope_gptj_partial_with_head_size_arg", "_npu_rotary_embedding", "A2",
            "hicann/ascend-transformer-boost src/ops_infer/rope/rope_operation.cpp@f589bb7 ParamCheck; "
            "vllm-ascend PR #7252 ('RopeOperation_0 Wrong rotaryCoeff: 128')",
            _atb_rope(torch.bfloat16, 128, 64, 128, neox=False), "rotaryCoeff"),
    Refusal("fia_mla_512_with_6_heads", "npu_fused_infer_attention_score", "A3",
            f"{_FIA_MD}:320-343 (MLA, D=512: query N in 1/2/4/.../128)", _mla_six_heads, "power of two"),
    Refusal("mrope_rotary_mode_interleaved", "npu_mrope", "A3",
            f"{_MROPE_SRC} (only 'half' / 'interleave'; the .md and vllm-ascend@182b75e's GPT-J branch spell "
            "'interleaved')", _mrope_mode("interleaved"), "half or interleave"),
    Refusal("mrope_rotary_mode_other", "npu_mrope", "A2", _MROPE_SRC, _mrope_mode("neox"), "half or interleave"),
    Refusal("mrope_section_not_listed", "npu_mrope", "A3",
            "op-plugin torch_npu-npu_mrope.md@517f2e7 (mrope_section list); vllm-ascend PR #14858 "
            "('mropeSection must be in the supported list' for [16, 16, 0])",
            _mrope_mode("half", (16, 16, 0)), "mrope_section"),
    Refusal("init_routing_v1_on_a3", "npu_moe_init_routing", "A3",
            "torch-npu 2.13.0 _op_plugin_docs.py and op-plugin torch_npu-npu_moe_init_routing.md@517f2e7:5-7 "
            "(Atlas A2 only)", _v1_routing_on_a3, "not available on the simulated SoC A3"),
    Refusal("fia_sparse_mode_3_without_mask", "npu_fused_infer_attention_score", "A2",
            f"{_FIA_MD}:406-409 (modes 2/3/4 need the 2048x2048 mask)", _fia_sparse3_without_mask, "2048"),
    Refusal("reshape_and_cache_int64_slots", "_npu_reshape_and_cache", "A3",
            "CANN ATB ReshapeAndCacheOperation (slotMapping int32)", _reshape_and_cache_int64_slots, "int32"),
    Refusal("sparse_flash_attention_default_attention_mode", "npu_sparse_flash_attention", "A3",
            "Ascend/op-plugin@517f2e7 torch_npu-npu_sparse_flash_attention.md (attention_mode: only 2); "
            "vllm-ascend@182b75e csrc/attention/sparse_flash_attention/op_host/sparse_flash_attention_tiling.cpp:795",
            _sfa_default_attention_mode, "attention_mode must be 2"),
    Refusal("lightning_indexer_128_query_heads", "npu_lightning_indexer", "A2",
            "Ascend/op-plugin@517f2e7 torch_npu-npu_lightning_indexer.md (A2/A3: query N <= 64)",
            _indexer_128_heads, "must be <= 64"),
]


def _device_family(tnpu) -> str:
    """The real device's product family from its SoC version (vllm_ascend/device/hardware.py@182b75e:64-75)."""
    v = int(tnpu.npu.get_soc_version())
    return "A2" if 220 <= v <= 225 else "A3" if 250 <= v <= 255 else "310P" if 200 <= v <= 205 else str(v)


def _cases():
    for p in PATTERNS:
        for soc in p.socs:
            marks = []
            if p.sim_gap and not REAL_NPU:
                from ascend_ops.simulator import SimulatedNpuError

                marks.append(pytest.mark.xfail(strict=True, raises=(SimulatedNpuError, NotImplementedError),
                                               reason=f"simulator refuses a hardware-proven call: {p.sim_gap}"))
            yield pytest.param(p, soc, id=f"{p.name}[{soc}]", marks=marks)


@pytest.mark.parametrize(("pattern", "soc"), list(_cases()))
def test_hardware_proven_call_is_accepted(simulated_npu, monkeypatch, pattern, soc):
    """The cited vllm-ascend call runs on the simulated ``soc`` (on a real device: on its own SoC)."""
    assert pattern.cite.startswith((VA, OP)) and ("@" in pattern.cite or "commit" in pattern.cite)
    if getattr(simulated_npu, "__simulated__", False):
        monkeypatch.setenv("ASCEND_OPS_SIM_SOC", soc)
        device = torch.device("cpu")
    else:
        if _device_family(simulated_npu) != soc:
            pytest.skip(f"pattern proven on {soc}; this device is {_device_family(simulated_npu)}")
        device = torch.device("npu")
    pattern.run(simulated_npu, device)


@pytest.mark.sim_only
@pytest.mark.parametrize("refusal", REFUSALS, ids=[r.name for r in REFUSALS])
def test_call_rejected_by_the_kernel_is_refused(simulated_npu, monkeypatch, refusal):
    from ascend_ops.simulator import SimulatedNpuError

    monkeypatch.setenv("ASCEND_OPS_SIM_SOC", refusal.soc)
    with pytest.raises(SimulatedNpuError, match=refusal.match):
        refusal.run(simulated_npu, torch.device("cpu"))
