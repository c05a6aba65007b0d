# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""LoRA in bfloat16 (CPU emulation): the adapter still changes the output and stays close to its
float32 reference.

Guards against LoRA silently returning the base model's answer in bf16 (a reported failure mode
of low-precision LoRA kernels). One bf16 engine (``max_loras=2``, rank 16) serves every prompt
twice in one batch, once with a peft adapter (non-zero random A and B, ``lora_adapters.py``) and
once on the base model. Checks, against HF transformers float32 (the adapter merged by peft):
each row's tokens agree with its own float32 reference teacher-forced at >= 95 % of positions
(top-1 or within 0.05 nats), and the adapter rows differ from the base rows of the same prompts.
"""

from __future__ import annotations

import pytest
from engine import close_llm, make_llm
from lora_adapters import MergedOracle, make_adapter, teacher_forced_agreement
from parity import SUMMARY

NEW = 16
PROMPTS = 4


@pytest.fixture(scope="module")
def rows(model_path, prompt_ids, tmp_path_factory):
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt
    from vllm.lora.request import LoRARequest

    adapter = make_adapter(model_path, tmp_path_factory.mktemp("lora_bf16") / "a1", seed=1)
    prompts = prompt_ids[:PROMPTS]
    req = LoRARequest("a1", 1, adapter)
    llm = make_llm(model_path, dtype="bfloat16", enable_lora=True, max_loras=2,
                   max_lora_rank=16, max_num_seqs=8)
    try:
        outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts * 2],
                            SamplingParams(temperature=0.0, max_tokens=NEW, ignore_eos=True),
                            lora_request=[req] * PROMPTS + [None] * PROMPTS, use_tqdm=False)
    finally:
        close_llm(llm)
    gen = [list(o.outputs[0].token_ids) for o in outs]
    with_adapter = list(zip(prompts, gen[:PROMPTS], strict=True))
    return adapter, with_adapter, list(zip(prompts, gen[PROMPTS:], strict=True))


def test_bf16_adapter_rows_follow_their_float32_reference(rows, model_path):
    adapter, with_adapter, _ = rows
    agreed, total = teacher_forced_agreement(MergedOracle(model_path, adapter).model, with_adapter)
    SUMMARY.append(f"LoRA bf16 adapter rows vs HF float32 + adapter: {agreed}/{total} positions")
    assert total == PROMPTS * NEW
    assert agreed / total >= 0.95, f"{agreed}/{total} positions agree with HF float32 + adapter"


def test_bf16_base_rows_follow_the_base_model(rows, oracle):
    _, _, base = rows
    agreed, total = teacher_forced_agreement(oracle.model, base)
    assert agreed / total >= 0.95, f"{agreed}/{total} positions agree with HF float32 base"


def test_bf16_adapter_changes_the_output(rows, oracle, model_path):
    adapter, with_adapter, base = rows
    differ = sum(a != b for (_, a), (_, b) in zip(with_adapter, base, strict=True))
    assert differ >= PROMPTS - 1, f"only {differ}/{PROMPTS} adapter rows differ from the base rows"
    # the adapter rows follow the adapter, not the base model: the merged reference agrees with
    # them at clearly more positions (at least one in eight) than the base model does
    merged, total = teacher_forced_agreement(MergedOracle(model_path, adapter).model, with_adapter)
    as_base, _ = teacher_forced_agreement(oracle.model, with_adapter)
    SUMMARY.append(f"LoRA bf16: {differ}/{PROMPTS} adapter rows differ from base rows; adapter "
                   f"positions agreeing with HF + adapter {merged}/{total}, with HF base "
                   f"{as_base}/{total}")
    assert merged - as_base >= total // 8, (
        f"adapter rows agree with HF + adapter at {merged}/{total} positions and with the base "
        f"model at {as_base}/{total}: the adapter barely shows")
