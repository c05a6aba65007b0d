# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Greedy parity, float32: vLLM + the Ascend plugin (CPU emulation) vs HF transformers.

One engine, the default one (conftest ``default_llm``, shared with test_plugin_ran.py; default
scheduling, prefix caching on): the 8-prompt batch, then a prompt whose shared prefix hits exactly
2 cached KV blocks.
"""

from __future__ import annotations

import pytest
from engine import generate_ids
from parity import SUMMARY, assert_batch_parity, judge, vllm_step_logprobs
from prompts import NEW_TOKENS

PREFIX_TEXT = (
    "The following is an excerpt from a long technical manual about maintaining a small "
    "lighthouse on a rocky island. Every morning the keeper climbs the spiral staircase, "
    "cleans the lens, checks the oil level of the lamp, records the weather in the logbook, "
    "and inspects the fog horn. ") * 12


@pytest.fixture(scope="module")
def llm(default_llm):
    """The default engine (conftest ``default_llm``), shared with the other modules using it."""
    return default_llm


def _block_size(llm) -> int:
    return llm.llm_engine.vllm_config.cache_config.block_size


def test_greedy_parity_8_prompts(llm, oracle, prompt_ids):
    outs = generate_ids(llm, prompt_ids)
    verdicts = []
    for ids, out in zip(prompt_ids, outs, strict=True):
        comp = out.outputs[0]
        assert len(comp.token_ids) == NEW_TOKENS
        verdicts.append(judge(list(comp.token_ids), vllm_step_logprobs(comp),
                              oracle.greedy(ids, NEW_TOKENS)))
    assert_batch_parity(verdicts, min_identical=7, label="8 prompts x 32 tokens")


def test_prefix_cache_hit_two_blocks(llm, oracle):
    bs = _block_size(llm)
    prefix = oracle.encode_text(PREFIX_TEXT)
    assert len(prefix) >= 2 * bs + bs // 2, "PREFIX_TEXT too short for the block size"
    prefix = prefix[: 2 * bs + bs // 2]  # 2 full blocks + half of a third (never cached)
    first = prefix + oracle.encode_text(" Question: what does the keeper clean?")
    second = prefix + oracle.encode_text(" Question: where is the lighthouse?")

    warm = generate_ids(llm, [first])[0]
    assert warm.num_cached_tokens == 0, "the prefix was cached before the first request"
    out = generate_ids(llm, [second])[0]
    # Exactly the two full shared blocks hit (the third block differs after the prefix).
    assert out.num_cached_tokens == 2 * bs
    comp = out.outputs[0]
    verdict = judge(list(comp.token_ids), vllm_step_logprobs(comp),
                    oracle.greedy(second, NEW_TOKENS))
    SUMMARY.append(f"prefix-cache hit ({out.num_cached_tokens} cached tokens = 2 blocks of {bs}):"
                   f" {verdict.detail}")
    assert verdict.ok, verdict.detail
