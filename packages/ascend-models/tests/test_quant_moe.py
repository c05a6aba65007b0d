# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""W8A8_DYNAMIC MoE experts of ``quantization="ascend"``: the experts' scheme from an msModelSlim
description (agreeing, mixed, unsupported, missing, fused float), and the int8 forward through
``ascend_moe_forward`` against a naive per-token oracle written here from the scheme's
definition (per-token symmetric activation quantization, per-channel int8 weights, HF Qwen3-MoE
routing: softmax top-k, renormalized), on both CPU backends."""

from __future__ import annotations

from types import SimpleNamespace

import ascend_ops
import pytest
import torch
from vllm_ascend_models.moe import ascend_moe_forward
from vllm_ascend_models.quantization.moe import AscendW8A8DynamicFusedMoEMethod, experts_scheme

PREFIX, E, H, INTER, T = "model.layers.0.mlp.experts", 4, 16, 8, 6
PROJS = ("gate_proj", "up_proj", "down_proj")


def _desc(scheme="W8A8_DYNAMIC", **override):
    d = {f"{PREFIX}.{e}.{p}.weight": scheme for e in range(E) for p in PROJS}
    d.update(override)
    return d


def test_scheme_of_agreeing_experts():
    assert experts_scheme(_desc(), PREFIX, E, PROJS) == "W8A8_DYNAMIC"
    fused_float = {f"{PREFIX}.gate_up_proj": "FLOAT", f"{PREFIX}.down_proj": "FLOAT"}
    assert experts_scheme(fused_float, PREFIX, E, PROJS) == "FLOAT"


@pytest.mark.parametrize("desc, match", [
    (_desc(**{f"{PREFIX}.2.up_proj.weight": "FLOAT"}), "mix quantization schemes.*2.up_proj.weight: FLOAT"),
    (_desc("W8A8"), r"0.gate_proj.weight' has scheme 'W8A8'.*W8A8_DYNAMIC"),
    ({k: v for k, v in _desc().items() if ".3.down_proj" not in k}, "no entry for '.*3.down_proj.weight'"),
    ({"model.layers.0.self_attn.q_proj.weight": "W8A8_DYNAMIC"}, "no entry for the experts of"),
])
def test_bad_descriptions_name_the_tensor(desc, match):
    with pytest.raises(ValueError, match=match):
        experts_scheme(desc, PREFIX, E, PROJS)


def _int8(w):
    scale = w.abs().amax(-1, keepdim=True) / 127
    return torch.round(w / scale).clamp(-128, 127).to(torch.int8), scale.squeeze(-1)


def _layer(seed=0):
    g = torch.Generator().manual_seed(seed)
    w13, s13 = _int8(torch.randn(E, 2 * INTER, H, generator=g))
    w2, s2 = _int8(torch.randn(E, H, INTER, generator=g))
    return SimpleNamespace(
        top_k=2, renormalize=True, scoring_func="softmax", use_grouped_topk=False,
        num_expert_group=None, topk_group=None, e_score_correction_bias=None,
        routed_scaling_factor=1.0, expert_map=None, w13_weight=w13, w2_weight=w2,
        w13_weight_scale=s13.float(), w2_weight_scale=s2.float(),
        quant_method=SimpleNamespace(int8_experts=AscendW8A8DynamicFusedMoEMethod.int8_experts))


def _fake_quant_linear(x, w_int8, w_scale):
    s = x.abs().amax(-1, keepdim=True) / 127
    xq = torch.round(x / s).clamp(-128, 127)
    return (xq @ w_int8.double().T) * w_scale.double() * s


def _naive(layer, x, logits):
    out = torch.zeros(x.shape, dtype=torch.float64)
    for t in range(x.shape[0]):
        p = torch.softmax(logits[t].double(), -1)
        w, ids = p.topk(2)
        w = w / w.sum()
        for wi, e in zip(w, ids.tolist(), strict=True):
            xt = x[t:t + 1].double()
            gu = _fake_quant_linear(xt, layer.w13_weight[e], layer.w13_weight_scale[e])[0]
            act = torch.nn.functional.silu(gu[:INTER]) * gu[INTER:]
            out[t] += wi * _fake_quant_linear(act[None], layer.w2_weight[e], layer.w2_weight_scale[e])[0]
    return out


@pytest.mark.parametrize("backend", ["reference", "native"])
def test_int8_experts_forward_matches_naive_oracle(backend):
    layer = _layer()
    g = torch.Generator().manual_seed(1)
    x, logits = torch.randn(T, H, generator=g), torch.randn(T, E, generator=g)
    with ascend_ops.use_backend(backend):
        ascend_ops.reset_call_counts()
        out = ascend_moe_forward(layer, x, logits)
        counts = ascend_ops.call_counts()
    assert counts.get("grouped_quant_matmul") == 2 and not counts.get("grouped_matmul")
    want = _naive(layer, x, logits)
    # float32 activations vs the float64 oracle: a rounding flip moves one int8 step of a token
    torch.testing.assert_close(out.double(), want, rtol=0, atol=2e-2 * want.abs().max().item())
    assert (out.double() - want).abs().mean() < 1e-3 * want.abs().max()
