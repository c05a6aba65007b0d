# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""An int8 W8A8 compressed-tensors SmolLM2 (quant_ct_checkpoint.py: made with the
``compressed-tensors`` library in set-up, cached) served in CPU emulation: vLLM's own
``compressed-tensors`` config loads it, its int8 GEMM is ours (quantization/compressed_int8.py:
``ascend_ops.dynamic_quant`` + ``quant_matmul``).

Judged against an independent oracle, not against vLLM's CPU backend: vLLM 0.32's CPU int8 GEMM
(``int8_scaled_mm_with_quant``) refuses float32 activations ("expect A to be bfloat16 or half"),
and in bfloat16 two implementations of per-token int8 quantization do not give the same tokens on
this model (test_quant_w8a8_dynamic.py's xfail: a few int8 rounding flips move SmolLM2's
log-probabilities by tenths of a nat). The oracle is HF transformers' model in float32 with every
decoder linear replaced by the scheme's arithmetic in float64 on the checkpoint's int8 tensors
(quant_oracle.py's W8A8_DYNAMIC arithmetic: per-token ``max|x| / 127``, round half to even; the
same as vLLM's dynamic int8 quantization). One engine for the module.
"""

from __future__ import annotations

import pytest
from _quant_cases import ENGINE, generate
from quant_ct_checkpoint import LINEARS, compressed_int8

N_PROMPTS, NEW = 4, 16
PERTURBED_RUNS = 7


@pytest.fixture(scope="module")
def ckpt() -> str:
    return compressed_int8()


@pytest.fixture(scope="module")
def served(ckpt, prompt_ids):
    import ascend_ops
    from engine import close_llm
    from vllm import LLM

    llm = LLM(model=ckpt, dtype="float32", **ENGINE)  # quantization from config.json
    try:
        quant = llm.llm_engine.vllm_config.model_config.quantization
        ascend_ops.reset_call_counts()
        tokens = generate(llm, prompt_ids[:N_PROMPTS], n=NEW)
        counts = ascend_ops.call_counts()
    finally:
        close_llm(llm)
    return dict(quant=quant, tokens=tokens, counts=counts)


def _oracle(float_path: str, ckpt: str):
    """HF float32 SmolLM2 whose decoder linears compute the checkpoint's int8 scheme (doc)."""
    import torch
    from quant_oracle import _FakeQuantLinear
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    tensors = load_file(f"{ckpt}/model.safetensors")
    model = AutoModelForCausalLM.from_pretrained(float_path, dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    for name, module in list(model.named_modules()):
        if isinstance(module, torch.nn.Linear) and name.rpartition(".")[2] in LINEARS:
            parent, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent), child, _FakeQuantLinear("W8A8_DYNAMIC", {
                "weight": tensors[f"{name}.weight"],
                "weight_scale": tensors[f"{name}.weight_scale"]}))
    return model


def test_served_by_vllms_compressed_tensors_config(served):
    assert served["quant"] == "compressed-tensors"


def test_int8_ops_ran_on_every_linear(served):
    counts = served["counts"]
    # per forward: 30 layers x 4 int8 matmuls (qkv, o, gate_up, down); NEW forwards at least
    assert counts.get("dynamic_quant", 0) >= 120 * NEW and counts.get("dynamic_quant") % 120 == 0
    assert counts.get("quant_matmul") == counts.get("dynamic_quant"), counts


def test_tokens_agree_with_the_oracle(served, ckpt, model_path, prompt_ids):
    """Teacher-forced, each of our tokens is within 0.05 nats of the oracle's top-1 in its exact
    run or one of its float32-rounding-perturbed runs (quant_oracle.teacher_forced), at >= 95 %
    of positions: the judge the simulated-NPU tier uses for msModelSlim checkpoints, with
    :data:`PERTURBED_RUNS` noisy runs instead of 3. This checkpoint quantizes every decoder
    linear, down_proj included, and its oracle is as sensitive as the msModelSlim ones
    (measured: 1e-7 relative input noise moves its first-token top-1 log-probability by up to
    0.6 nats on each of the 4 prompts, and our engine's first-token log-probabilities differ
    from the exact run's by 0.1-0.8 nats, as the engine's do on the msModelSlim W8A8_DYNAMIC
    checkpoint), so whether our token is one some rounding of the scheme's arithmetic picks is
    judged over more samples of that rounding; a wrong scale or layout stays far outside it."""
    from quant_oracle import teacher_forced

    agreed, total, misses = teacher_forced(_oracle(model_path, ckpt), prompt_ids[:N_PROMPTS],
                                           served["tokens"], perturbed=PERTURBED_RUNS)
    assert total == N_PROMPTS * NEW
    assert agreed / total >= 0.95, f"{agreed}/{total} agree:\n  " + "\n  ".join(misses)
