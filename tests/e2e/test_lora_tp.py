# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Multi-LoRA with tensor parallelism (CPU emulation, float32): TP=2 == TP=1 on a tiny random
Qwen3 (4 heads, so it splits over 2 ranks; SmolLM2's 9 heads do not), and TP=1 == HF with the
adapter merged by peft. vLLM's LoRA layers shard lora_b of the column-parallel layers (packed
qkv, gate_up) and lora_a of the row-parallel ones (o_proj, down_proj) per rank; the products run
through our punica wrapper on every rank."""

from __future__ import annotations

import pytest
from lora_adapters import MergedOracle, make_adapter
from tiny_qwen3 import save_tiny_qwen3

PROMPTS = [[1, 504, 3458, 314, 4536], [1, 2189, 578, 260, 2103, 282, 3704, 30, 216, 198],
           [7, 19, 3456, 22, 901, 15000, 40000, 12, 5, 877, 343], [1, 9, 8, 7, 6, 5, 4]]
ADAPTER_ROWS = [True, False, True, True]  # the base model in the same batch
NEW_TOKENS = 8


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("lora_tp")
    model = save_tiny_qwen3(root / "model")
    return model, make_adapter(model, root / "adapter", seed=7, b_std=1.0)


def _generate(model: str, adapter: str, tp: int) -> list[list[int]]:
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt
    from vllm.lora.request import LoRARequest

    llm = LLM(model=model, dtype="float32", max_model_len=256, enforce_eager=True,
              gpu_memory_utilization=0.5, seed=0, max_num_seqs=8, enable_lora=True,
              max_loras=2, max_lora_rank=16, tensor_parallel_size=tp)
    try:
        req = LoRARequest("a", 1, adapter)
        outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in PROMPTS],
                            SamplingParams(temperature=0.0, max_tokens=NEW_TOKENS, ignore_eos=True),
                            lora_request=[req if a else None for a in ADAPTER_ROWS],
                            use_tqdm=False)
        return [list(o.outputs[0].token_ids) for o in outs]
    finally:
        llm.llm_engine.engine_core.shutdown()


def test_lora_tp2_equals_tp1_and_hf_merged(tiny):
    from hf_oracle import HFOracle

    model, adapter = tiny
    tp1 = _generate(model, adapter, 1)
    merged, base = MergedOracle(model, adapter), HFOracle(model)
    for row, (p, with_adapter) in enumerate(zip(PROMPTS, ADAPTER_ROWS, strict=True)):
        ref = merged if with_adapter else base
        assert tp1[row] == ref.greedy(p, NEW_TOKENS).tokens, f"row {row}"
    assert any(tp1[r] != base.greedy(PROMPTS[r], NEW_TOKENS).tokens
               for r, a in enumerate(ADAPTER_ROWS) if a), "the adapter changes nothing"
    assert _generate(model, adapter, 2) == tp1
