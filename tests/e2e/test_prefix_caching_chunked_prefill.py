# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Prefix caching x chunked prefill must not change greedy output.

The 2x2 matrix {prefix caching off, on} x {chunked prefill off, on with
``max_num_batched_tokens=64``}: 4 prompts of 2B+20 .. 2B+200 tokens (B = the KV block size the
engine actually uses, 128 with our backend), prompts 2-4 sharing their first 2B tokens with
prompt 1, submitted together, greedy. Right: every prompt's tokens identical in all four
configurations (each configuration is its own engine, built and shut down in turn).
"""

from __future__ import annotations

import pytest
from engine import close_llm, make_llm

MAX_TOKENS = 32  # the case says 50; 32 keeps four engine runs inside the CI budget
SUFFIX_LENGTHS = (20, 80, 140, 200)
CONFIGS = {
    "prefix-off/chunked-off": dict(enable_prefix_caching=False, enable_chunked_prefill=False),
    "prefix-on/chunked-off": dict(enable_prefix_caching=True, enable_chunked_prefill=False),
    "prefix-off/chunked-on": dict(enable_prefix_caching=False, enable_chunked_prefill=True,
                                  max_num_batched_tokens=64),
    "prefix-on/chunked-on": dict(enable_prefix_caching=True, enable_chunked_prefill=True,
                                 max_num_batched_tokens=64),
}
BLOCK = 128  # our backend's preferred KV block size; each engine's actual value is asserted

_TEXT = (
    "Photosynthesis is the process by which green plants, algae and some bacteria turn light "
    "energy into chemical energy. Water is split, oxygen is released, and the energy carriers "
    "ATP and NADPH are made. In the Calvin cycle the plant fixes carbon dioxide into sugars. "
    "Rivers carry sediment from the mountains to the sea, building deltas over thousands of "
    "years. The printing press spread books across Europe and changed how people learned. "
    "A compiler translates source code into machine instructions, checking types on the way. "
)
_SUFFIXES = (
    "Question: which gas do plants release? Answer:",
    "Now write a short story about a river that forgot where the sea was. Once upon a time,",
    "def count_words(text):\n    \"\"\"Return a dict mapping each word to its count.\"\"\"\n",
    "The most important inventions of the last thousand years, in order, were",
)


def _build_prompts(tokenizer) -> list[list[int]]:
    text_ids = tokenizer(_TEXT * 8)["input_ids"]
    prefix = text_ids[: 2 * BLOCK]
    prompts = []
    for length, suffix in zip(SUFFIX_LENGTHS, _SUFFIXES, strict=True):
        tail = (tokenizer(" " + suffix)["input_ids"] + text_ids[2 * BLOCK:])[:length]
        prompts.append(prefix + tail)
    return prompts


@pytest.fixture(scope="module")
def matrix_runs(model_path, oracle):
    """config name -> per-prompt greedy token ids (one engine per configuration, in turn)."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    prompts = _build_prompts(oracle.tokenizer)
    params = SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS, ignore_eos=True)
    runs = {}
    for name, cfg in CONFIGS.items():
        llm = make_llm(model_path, max_model_len=1024, max_num_seqs=8, **cfg)
        try:
            cache = llm.llm_engine.vllm_config.cache_config
            sched = llm.llm_engine.vllm_config.scheduler_config
            assert cache.block_size == BLOCK, (name, cache.block_size)
            assert bool(cache.enable_prefix_caching) == cfg["enable_prefix_caching"], name
            assert bool(sched.enable_chunked_prefill) == cfg["enable_chunked_prefill"], name
            if cfg["enable_chunked_prefill"]:
                assert sched.max_num_batched_tokens == 64, name
            outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params,
                                use_tqdm=False)
            runs[name] = [list(o.outputs[0].token_ids) for o in outs]
            if cfg["enable_prefix_caching"]:
                runs[name + ":cached"] = [o.num_cached_tokens for o in outs]
        finally:
            close_llm(llm)
    return prompts, runs


def test_prompt_shapes(matrix_runs):
    prompts, _ = matrix_runs
    assert [len(p) for p in prompts] == [2 * BLOCK + n for n in SUFFIX_LENGTHS]
    assert all(p[: 2 * BLOCK] == prompts[0][: 2 * BLOCK] for p in prompts)


@pytest.mark.parametrize("name", [n for n in CONFIGS if n != "prefix-off/chunked-off"])
def test_greedy_tokens_identical_across_matrix(matrix_runs, name):
    _, runs = matrix_runs
    base = runs["prefix-off/chunked-off"]
    assert all(len(t) == MAX_TOKENS for t in base)
    for i, (want, got) in enumerate(zip(base, runs[name], strict=True)):
        first = next((j for j, (a, b) in enumerate(zip(want, got, strict=False)) if a != b), None)
        assert got == want, f"prompt {i}: {name} diverges from the baseline at token {first}"


def test_prefix_cache_was_used(matrix_runs):
    """With caching on, the shared 2B-token prefix is reused by at least one later prompt
    (otherwise the matrix would not exercise cached prefill)."""
    _, runs = matrix_runs
    for name in ("prefix-on/chunked-off", "prefix-on/chunked-on"):
        assert max(runs[name + ":cached"]) >= 2 * BLOCK, (name, runs[name + ":cached"])
