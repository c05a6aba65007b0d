# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""LoRA on a tiny random Qwen3-MoE (CPU emulation, float32): on the routed experts and on
attention, several adapters and the base model in one batch, against HF transformers.

vLLM 0.32 stacks expert adapters per (adapter slot, expert) in ``FusedMoEWithLoRA``
(``vllm/lora/layers/fused_moe.py``); the Ascend MoE method adds their products inside its
monolithic forward (``vllm_ascend_models/lora/moe_experts.py``). One engine (``max_loras=2``,
``max_lora_rank=256``, no target restriction) serves:

* ``experts``: rank 16 on every expert's gate/up/down projection (``lora_moe_adapters.py``);
  oracle: HF on the checkpoint with W + (alpha / r) B A merged into each expert;
* ``attn``: rank 256 on q/k/v/o made by peft (above the 128 limit of the NPU operator, so the
  ops take their composition path, docs/lora.md); oracle: HF with peft's merge.

Greedy parity rule of ``parity.py`` (token-identical or near ties), and each adapter changes
the output.
"""

from __future__ import annotations

import pytest
from engine import close_llm, greedy_params, make_llm
from hf_oracle import HFOracle
from lora_adapters import MergedOracle, make_adapter
from lora_moe_adapters import make_expert_adapter, merged_checkpoint
from moe_checkpoints import save_tiny
from parity import assert_batch_parity, judge, vllm_step_logprobs

ATTENTION = ["q_proj", "k_proj", "v_proj", "o_proj"]
TEXTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time", "1, 2, 3, 4,"]
ROWS = [(0, "experts"), (1, "experts"), (2, "experts"), (3, "experts"),
        (0, None), (1, "attn"), (2, "attn"), (3, None)]
IDS = {"experts": 1, "attn": 2}
NEW = 10


@pytest.fixture(scope="module")
def run(model_path, tmp_path_factory):
    import ascend_ops
    from vllm.inputs import TokensPrompt
    from vllm.lora.request import LoRARequest

    root = tmp_path_factory.mktemp("lora_moe")
    model = save_tiny("qwen3_moe", root / "model", model_path)
    adapters = {"experts": make_expert_adapter(model, root / "experts", seed=30),
                "attn": make_adapter(model, root / "attn", seed=31, rank=256, b_std=1.0,
                                     targets=ATTENTION)}
    base = HFOracle(model)
    prompts = [base.encode_text(t) for t in TEXTS]
    llm = make_llm(model, max_model_len=256, enable_lora=True, max_loras=2, max_lora_rank=256)
    try:
        ascend_ops.reset_call_counts()
        reqs = [LoRARequest(n, IDS[n], adapters[n]) if n else None for _, n in ROWS]
        outs = llm.generate([TokensPrompt(prompt_token_ids=prompts[p]) for p, _ in ROWS],
                            greedy_params(NEW), lora_request=reqs, use_tqdm=False)
        counts = ascend_ops.call_counts()
    finally:
        close_llm(llm)
    oracles = {None: base, "attn": MergedOracle(model, adapters["attn"]),
               "experts": HFOracle(merged_checkpoint(model, adapters["experts"], root / "merged"))}
    return outs, counts, oracles, prompts


def test_experts_and_attention_adapters_match_hf_merged(run):
    outs, _, oracles, prompts = run
    verdicts = [judge(list(o.outputs[0].token_ids), vllm_step_logprobs(o.outputs[0]),
                      oracles[name].greedy(prompts[p], NEW))
                for o, (p, name) in zip(outs, ROWS, strict=True)]
    assert_batch_parity(verdicts, min_identical=len(ROWS) - 1, label="qwen3_moe tiny + 2 LoRAs")


@pytest.mark.parametrize("name", ["experts", "attn"])
def test_each_adapter_changes_the_output(run, name):
    _, _, oracles, prompts = run
    changed = sum(oracles[name].greedy(prompts[p], NEW).tokens
                  != oracles[None].greedy(prompts[p], NEW).tokens
                  for p, n in ROWS if n == name)
    assert changed >= 2, f"adapter {name} barely changes the output"


def test_moe_and_lora_ops_ran(run):
    _, counts, _, _ = run
    assert counts.get("grouped_matmul", 0) > 0, "the Ascend MoE path did not run"
    assert counts.get("lora_linear", 0) > 0, "no LoRA op ran"
