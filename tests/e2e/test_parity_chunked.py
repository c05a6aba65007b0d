# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Greedy parity with chunked prefill: at most 64 tokens scheduled per step, so the long prompts
are prefilled in several chunks (each chunk attends to the KV of the earlier ones)."""

from __future__ import annotations

import pytest
from engine import close_llm, generate_ids, make_llm
from parity import assert_batch_parity, judge, vllm_step_logprobs
from prompts import NEW_TOKENS

MAX_BATCHED = 64


@pytest.fixture(scope="module")
def llm(model_path):
    engine = make_llm(model_path, enable_chunked_prefill=True,
                      max_num_batched_tokens=MAX_BATCHED, max_num_seqs=8)
    yield engine
    close_llm(engine)


def test_greedy_parity_chunked_prefill(llm, oracle, prompt_ids):
    # The test only means something if some prompts need more than one chunk.
    assert sum(len(p) > MAX_BATCHED for p in prompt_ids) >= 2
    assert llm.llm_engine.vllm_config.scheduler_config.max_num_batched_tokens == MAX_BATCHED
    outs = generate_ids(llm, prompt_ids)
    verdicts = []
    for ids, out in zip(prompt_ids, outs, strict=True):
        comp = out.outputs[0]
        verdicts.append(judge(list(comp.token_ids), vllm_step_logprobs(comp),
                              oracle.greedy(ids, NEW_TOKENS)))
    assert_batch_parity(verdicts, min_identical=7,
                        label=f"chunked prefill ({MAX_BATCHED} tokens/step), 8 prompts x 32 tokens")
