# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Ascend MoE method: registration, the routed-experts forward against a naive per-token oracle
(written here from the HF Qwen3-MoE / Mixtral / DeepSeek-V2 semantics), expert-parallel split sums
equal the unsplit layer, and bad settings raise naming the setting."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from vllm_ascend_models.moe import ascend_moe_forward, validate_moe_settings

E, H, INTER, T = 8, 16, 12, 7


def _layer(top_k=2, renormalize=True, scoring="softmax", groups=None, topk_group=None, bias=None,
           scale=1.0, expert_map=None, seed=0, inter=INTER):
    g = torch.Generator().manual_seed(seed)
    return SimpleNamespace(
        top_k=top_k, renormalize=renormalize, scoring_func=scoring, use_grouped_topk=groups is not None,
        num_expert_group=groups, topk_group=topk_group, e_score_correction_bias=bias,
        routed_scaling_factor=scale, expert_map=expert_map,
        w13_weight=torch.randn(E, 2 * inter, H, generator=g) / H**0.5,  # vLLM layout [E, 2I, H]
        w2_weight=torch.randn(E, H, inter, generator=g) / inter**0.5,  # [E, H, I]
    )


def _naive(layer, x, logits):
    """Per token: score, (group-)select, weight, run each chosen expert's SwiGLU MLP, sum (float64)."""
    out = torch.zeros(x.shape, dtype=torch.float64)
    for t in range(x.shape[0]):
        s = logits[t].double()
        scores = torch.softmax(s, -1) if layer.scoring_func == "softmax" else torch.sigmoid(s)
        choice = scores + (layer.e_score_correction_bias.double() if layer.e_score_correction_bias is not None else 0)
        if layer.use_grouped_topk:
            per = E // layer.num_expert_group
            groups = choice.view(layer.num_expert_group, per)
            biased = layer.e_score_correction_bias is not None
            gs = groups.topk(2, -1).values.sum(-1) if biased else groups.max(-1).values
            keep = gs.topk(layer.topk_group).indices
            mask = torch.full_like(choice, float("-inf"))
            for gi in keep.tolist():
                mask[gi * per:(gi + 1) * per] = 0
            choice = choice + mask
        ids = choice.topk(layer.top_k).indices
        w = scores[ids]
        if layer.renormalize:
            w = w / w.sum()
        w = w * layer.routed_scaling_factor
        for wi, e in zip(w, ids.tolist(), strict=True):
            gate_up = layer.w13_weight[e].double() @ x[t].double()
            inter = gate_up.shape[0] // 2
            act = torch.nn.functional.silu(gate_up[:inter]) * gate_up[inter:]
            out[t] += wi * (layer.w2_weight[e].double() @ act)
    return out


CASES = {
    "qwen3_moe(softmax, renormalize)": dict(),
    "softmax no renormalize": dict(renormalize=False),
    "deepseek_v2(group max, scale)": dict(renormalize=False, groups=4, topk_group=2, scale=1.5),
    "deepseek_v3(sigmoid, bias, top2-sum groups)": dict(scoring="sigmoid", groups=4, topk_group=2,
                                                        bias=torch.linspace(-0.1, 0.1, E), scale=2.5),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_forward_matches_naive_oracle(case):
    layer = _layer(**CASES[case])
    g = torch.Generator().manual_seed(1)
    x, logits = torch.randn(T, H, generator=g), torch.randn(T, E, generator=g)
    torch.testing.assert_close(ascend_moe_forward(layer, x, logits).double(), _naive(layer, x, logits),
                               atol=1e-5, rtol=1e-5)


def test_expert_parallel_halves_sum_to_full_layer():
    """EP=2 emulated in one process: each rank holds half the experts (vLLM expert_map: global id ->
    local slot or -1); the sum of the ranks' outputs (the runner's all-reduce) equals EP=1."""
    full = _layer(groups=4, topk_group=2, renormalize=False, scale=1.5)
    g = torch.Generator().manual_seed(2)
    x, logits = torch.randn(T, H, generator=g), torch.randn(T, E, generator=g)
    total = torch.zeros(T, H)
    for rank in range(2):
        local = range(rank * E // 2, (rank + 1) * E // 2)
        emap = torch.full((E,), -1, dtype=torch.int32)
        emap[list(local)] = torch.arange(E // 2, dtype=torch.int32)
        part = SimpleNamespace(**{**vars(full), "expert_map": emap,
                                  "w13_weight": full.w13_weight[list(local)],
                                  "w2_weight": full.w2_weight[list(local)]})
        total += ascend_moe_forward(part, x, logits)
    torch.testing.assert_close(total, ascend_moe_forward(full, x, logits), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(top_k=9), "num_experts_per_tok=9"),
        (dict(ep_size=3), "expert-parallel size"),
        (dict(scoring_func="sqrtsoftplus"), "scoring_func='sqrtsoftplus'"),
        (dict(activation="gelu"), "activation 'gelu'"),
        (dict(num_expert_group=3, topk_group=1), "n_group=3"),
        (dict(num_expert_group=4, topk_group=5), "topk_group=5"),
    ],
)
def test_bad_settings_name_the_setting(kw, match):
    args = dict(num_experts=E, top_k=2, ep_size=1, scoring_func="softmax", activation="silu")
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        validate_moe_settings(**args)


def test_register_replaces_unquantized_method():
    from vllm.model_executor.custom_op import op_registry_oot
    from vllm.model_executor.layers.fused_moe.unquantized_fused_moe_method import (
        UnquantizedFusedMoEMethod,
    )

    ours = op_registry_oot["UnquantizedFusedMoEMethod"]
    assert issubclass(ours, UnquantizedFusedMoEMethod) and ours.__module__ == "vllm_ascend_models.moe"
    assert ours.name == UnquantizedFusedMoEMethod.name


class _Experts(torch.nn.Module):
    """A weak-referenceable stand-in for vLLM's RoutedExperts (what ``pack_expert_weights`` reads)."""

    def __init__(self, ns):
        super().__init__()
        self.__dict__.update(vars(ns))


def test_packed_experts_give_the_same_output_and_are_released(monkeypatch):
    import gc

    import ascend_ops
    from ascend_ops._dispatch import native_module
    from ascend_ops.native import moe as _native_moe
    from vllm_ascend_models.moe import pack_expert_weights

    calls = []
    real = native_module().grouped_matmul_packed
    monkeypatch.setattr(native_module(), "grouped_matmul_packed",
                        lambda *a: (calls.append(a), real(*a))[1])
    g = torch.Generator().manual_seed(3)
    x, logits = torch.randn(T, H, generator=g), torch.randn(T, E, generator=g)
    plain = _layer()
    plain.w13_weight, plain.w2_weight = plain.w13_weight.bfloat16(), plain.w2_weight.bfloat16()
    x = x.bfloat16()  # bfloat16 experts are packed on every build (_native_moe.packed_dtypes)
    want = ascend_moe_forward(plain, x, logits)
    before = _native_moe.pack_count()
    layer = _Experts(plain)
    with ascend_ops.use_backend("native"):
        pack_expert_weights(layer)
        assert layer.ascend_w13_handle >= 0 and layer.ascend_w2_handle >= 0
        got = ascend_moe_forward(layer, x, logits)
        assert len(calls) == 2, "both grouped matmuls must run on the packed weights"
        torch.testing.assert_close(got, want, atol=2e-2, rtol=2e-2)
        layer.w2_weight.mul_(2.0)  # a weight reload writes in place: the pack follows
        torch.testing.assert_close(ascend_moe_forward(layer, x, logits), 2 * want, atol=4e-2, rtol=2e-2)
    assert _native_moe.pack_count() == before + 2
    del layer
    gc.collect()
    assert _native_moe.pack_count() == before


def test_w13_and_swiglu_run_in_one_pass_when_the_intermediate_fills_column_blocks(monkeypatch):
    """moe_intermediate_size a multiple of 32: the packed w13 product and its SwiGLU are one
    kernel call (``_C.grouped_matmul_packed_swiglu``), then the packed w2."""
    import ascend_ops
    from ascend_ops._dispatch import native_module
    from vllm_ascend_models.moe import pack_expert_weights

    if not ascend_ops.native_available():
        pytest.skip("ascend_ops._C is not built")
    calls = []
    for name in ("grouped_matmul_packed_swiglu", "grouped_matmul_packed"):
        real = getattr(native_module(), name)
        monkeypatch.setattr(native_module(), name,
                            lambda *a, name=name, real=real: (calls.append(name), real(*a))[1])
    g = torch.Generator().manual_seed(4)
    x, logits = torch.randn(T, H, generator=g), torch.randn(T, E, generator=g)
    layer = _Experts(_layer(inter=32))
    with ascend_ops.use_backend("native"):
        pack_expert_weights(layer)
        got = ascend_moe_forward(layer, x, logits)
    assert calls == ["grouped_matmul_packed_swiglu", "grouped_matmul_packed"]
    torch.testing.assert_close(got.double(), _naive(layer, x, logits), atol=1e-5, rtol=1e-5)


def test_no_packs_off_the_native_backend():
    import ascend_ops
    from vllm_ascend_models.moe import pack_expert_weights

    layer = _Experts(_layer())  # float32 (packed by the native backend on non-AVX-512 builds)
    with ascend_ops.use_backend("reference"):
        pack_expert_weights(layer)
    assert layer.ascend_w13_handle == -1 and layer.ascend_w2_handle == -1
    layer.w13_weight, layer.w2_weight = layer.w13_weight.bfloat16(), layer.w2_weight.bfloat16()
    with ascend_ops.use_backend("reference"):
        pack_expert_weights(layer)
    assert layer.ascend_w13_handle == -1 and layer.ascend_w2_handle == -1




def _half_case(expert_map=None):
    layer = _layer(groups=2, topk_group=1, renormalize=False, scale=1.5, expert_map=expert_map)
    layer.w13_weight, layer.w2_weight = layer.w13_weight.half(), layer.w2_weight.half()
    g = torch.Generator().manual_seed(3)
    return layer, torch.randn(T, H, generator=g).half(), torch.randn(T, E, generator=g).half()


@pytest.mark.parametrize("soc", ["A2", "A3"])
def test_npu_forward_runs_without_host_syncs(simulated_npu, soc, monkeypatch):
    """The simulated-NPU MoE forward (init routing v2, grouped matmuls, token unpermute) on A2 and
    A3: no host sync per layer (rows per expert are counted on the device; ``torch.bincount``'s
    NPU kernel reads min and max on the host, op-plugin BincountKernelNpuOpApi.cpp)."""
    from ascend_ops import simulator

    monkeypatch.setenv("ASCEND_OPS_SIM_SOC", soc)
    layer, x, logits = _half_case()
    with simulator.tracking() as ledger:
        got = ascend_moe_forward(layer, x, logits)
    assert ledger.host_syncs == 0, dict(ledger.host_sync_sites)
    assert {"npu_moe_init_routing_v2", "npu_moe_token_unpermute"} <= set(ledger.launches)
    assert not {"npu_moe_init_routing", "npu_moe_finalize_routing"} & set(ledger.launches)
    torch.testing.assert_close(got.double(), _naive(layer, x, logits), atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("soc", ["A2", "A3"])
def test_npu_forward_is_captured_and_replayed(simulated_npu, soc, monkeypatch):
    """The forward captured in an NPU graph (as vLLM's decode graphs capture every MoE layer)
    replays with new inputs: nothing in it synchronises with the host."""
    monkeypatch.setenv("ASCEND_OPS_SIM_SOC", soc)
    emap = torch.arange(E, dtype=torch.int32)  # EP-style id remapping stays on the device too
    layer, x, logits = _half_case(expert_map=emap)
    out = torch.empty(T, H, dtype=torch.float16)
    graph = torch.npu.NPUGraph()
    with torch.npu.graph(graph):
        out.copy_(ascend_moe_forward(layer, x, logits))
    g = torch.Generator().manual_seed(4)
    x.copy_(torch.randn(T, H, generator=g))
    logits.copy_(torch.randn(T, E, generator=g))
    graph.replay()
    torch.testing.assert_close(out.double(), _naive(layer, x, logits), atol=2e-2, rtol=2e-2)
