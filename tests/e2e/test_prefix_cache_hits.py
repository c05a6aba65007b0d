# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Prefix-cache hits are whole blocks, and counted.

Prefix caching on, block size B. For N in {B-1, B, B+1, 2B, 2B+1, 4B}: an N-token prompt is sent
twice in a row with ``max_tokens=1``. Right: the second request hits ``B * floor((N - 1) / B)``
tokens (vLLM's documented rule: only full blocks are cached, and the last prompt token is always
recomputed so there are logits to sample from). Both the per-request ``num_cached_tokens`` and
the engine's ``vllm:prefix_cache_queries`` / ``vllm:prefix_cache_hits`` counters (the ones
``/metrics`` serves, read offline through ``LLM.get_metrics()``) are checked. Run with our
backend's default block size (128) and with ``block_size=16`` set explicitly.
"""

from __future__ import annotations

import random

import pytest
from engine import close_llm, make_llm

MAX_MODEL_LEN = 640  # 4 * 128 prompt tokens + 1 generated


def _counters(llm) -> tuple[int, int]:
    """(prefix-cache queries, prefix-cache hits) in tokens, from the engine's metrics."""
    values = {m.name: m.value for m in llm.get_metrics() if hasattr(m, "value")}
    return int(values["vllm:prefix_cache_queries"]), int(values["vllm:prefix_cache_hits"])


@pytest.fixture(scope="module", params=[None, 16], ids=["default-block", "block-16"])
def engine(request, model_path):
    overrides = {} if request.param is None else {"block_size": request.param}
    llm = make_llm(model_path, max_model_len=MAX_MODEL_LEN, enable_prefix_caching=True,
                   disable_log_stats=False, max_num_seqs=4, **overrides)
    yield llm, request.param
    close_llm(llm)


def test_block_size_is_the_requested_one(engine):
    llm, requested = engine
    block = llm.llm_engine.vllm_config.cache_config.block_size
    assert block == (128 if requested is None else requested)


@pytest.mark.parametrize("case", ["B-1", "B", "B+1", "2B", "2B+1", "4B"])
def test_second_request_hits_whole_blocks(engine, case):
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    llm, _ = engine
    block = llm.llm_engine.vllm_config.cache_config.block_size
    mult, _, extra = case.partition("B")
    n = (int(mult) if mult else 1) * block + (int(extra) if extra else 0)
    # A prompt of ordinary (non-special) token ids, distinct for every (block size, N), so no
    # earlier test's blocks can be hit.
    rng = random.Random(f"{block}:{case}")
    prompt = TokensPrompt(prompt_token_ids=[rng.randrange(1000, 40000) for _ in range(n)])
    params = SamplingParams(temperature=0.0, max_tokens=1)

    first = llm.generate([prompt], params, use_tqdm=False)[0]
    q0, h0 = _counters(llm)
    second = llm.generate([prompt], params, use_tqdm=False)[0]
    q1, h1 = _counters(llm)

    want = block * ((n - 1) // block)
    assert (first.num_cached_tokens or 0) == 0, "a fresh prompt cannot hit the cache"
    assert second.num_cached_tokens == want
    assert (q1 - q0, h1 - h0) == (n, want)
    # Cached prefill must not change the result.
    assert second.outputs[0].token_ids == first.outputs[0].token_ids
