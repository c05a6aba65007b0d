# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""LoRA on the routed experts of the Ascend MoE forward (``vllm_ascend_models/lora/moe_experts.py``)
against a naive float64 oracle written from the HF/PEFT semantics: each token's chosen experts run
their SwiGLU MLP with the token's adapter merged into the expert's gate, up and down projections
(W + B A; vLLM folds the PEFT scaling into B). Tokens without an adapter (slot -1) use the base
experts. CPU backends and the NPU branch on the simulated torch_npu (float16, rank 16, dims
multiples of 16: one ``npu_batch_gather_matmul_`` per product on Atlas A2, the aten composition
on A3, docs/simulated-npu.md)."""

from __future__ import annotations

from types import SimpleNamespace

import ascend_ops
import pytest
import torch
from vllm_ascend_models.moe import ascend_moe_forward

E, H, INTER, T, R, SLOTS = 4, 32, 16, 6, 16, 2
ADAPTER_OF_TOKEN = [0, -1, 1, 1, -1, 0]


def _case(dtype, seed=0):
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape, std=1.0):
        return (torch.randn(*shape, generator=g) * std).to(dtype)

    layer = SimpleNamespace(
        top_k=2, renormalize=True, scoring_func="softmax", use_grouped_topk=False,
        num_expert_group=None, topk_group=None, e_score_correction_bias=None,
        routed_scaling_factor=1.0, expert_map=None,
        w13_weight=rnd(E, 2 * INTER, H, std=H ** -0.5), w2_weight=rnd(E, H, INTER, std=INTER ** -0.5))
    idx = torch.tensor(ADAPTER_OF_TOKEN + [-1] * 4)  # the punica buffer is longer than the batch
    layer._ascend_expert_lora = SimpleNamespace(
        w13_lora_a_stacked=(rnd(SLOTS, E, R, H, std=H ** -0.5), rnd(SLOTS, E, R, H, std=H ** -0.5)),
        w13_lora_b_stacked=(rnd(SLOTS, E, INTER, R, std=0.5 * R ** -0.5),
                            rnd(SLOTS, E, INTER, R, std=0.5 * R ** -0.5)),
        w2_lora_a_stacked=(rnd(SLOTS, E, R, INTER, std=INTER ** -0.5),),
        w2_lora_b_stacked=(rnd(SLOTS, E, H, R, std=0.5 * R ** -0.5),),
        punica_wrapper=SimpleNamespace(token_lora_indices_for=lambda n: idx[:n]))
    return layer, rnd(T, H), rnd(T, E)


def _naive(layer, x, logits):
    lora = layer._ascend_expert_lora
    out = torch.zeros(x.shape, dtype=torch.float64)
    for t in range(x.shape[0]):
        scores = torch.softmax(logits[t].double(), -1)
        ids = scores.topk(layer.top_k).indices
        w = scores[ids] / scores[ids].sum()
        slot = ADAPTER_OF_TOKEN[t]
        for wi, e in zip(w, ids.tolist(), strict=True):
            w13, w2 = layer.w13_weight[e].double(), layer.w2_weight[e].double()
            if slot >= 0:
                delta = [b[slot, e].double() @ a[slot, e].double() for a, b in
                         zip(lora.w13_lora_a_stacked, lora.w13_lora_b_stacked, strict=True)]
                w13 = w13 + torch.cat(delta)
                w2 = w2 + lora.w2_lora_b_stacked[0][slot, e].double() @ lora.w2_lora_a_stacked[0][slot, e].double()
            gate_up = w13 @ x[t].double()
            act = torch.nn.functional.silu(gate_up[:INTER]) * gate_up[INTER:]
            out[t] += wi * (w2 @ act)
    return out


def _without_lora(layer):
    return SimpleNamespace(**{k: v for k, v in vars(layer).items() if k != "_ascend_expert_lora"})


def test_expert_lora_matches_merged_oracle(backend):
    layer, x, logits = _case(torch.float32)
    got = ascend_moe_forward(layer, x, logits).double()
    torch.testing.assert_close(got, _naive(layer, x, logits), atol=1e-5, rtol=1e-5)
    base = ascend_moe_forward(_without_lora(layer), x, logits).double()
    changed = (got - base).abs().amax(-1) > 1e-3
    assert changed.tolist() == [s >= 0 for s in ADAPTER_OF_TOKEN], "rows with slot -1 must be base"




@pytest.mark.parametrize("soc", ["A2", "A3"])
def test_expert_lora_npu_branch(simulated_npu, soc, monkeypatch):
    from ascend_ops import simulator

    # npu_batch_gather_matmul_ is documented for Atlas A2 only: A3 runs the aten composition
    monkeypatch.setenv("ASCEND_OPS_SIM_SOC", soc)

    layer, x, logits = _case(torch.float16)
    ascend_ops.reset_call_counts()
    got = ascend_moe_forward(layer, x, logits).double()
    torch.testing.assert_close(got, _naive(layer, x, logits), atol=2e-2, rtol=2e-2)
    assert ascend_ops.call_counts(per_backend=True).get(("lora_linear", "npu")) == 3
    assert simulator.ledger().launches.get("npu_batch_gather_matmul_", 0) == (3 if soc == "A2" else 0)
