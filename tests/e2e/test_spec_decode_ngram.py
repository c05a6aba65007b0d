# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""n-gram speculative decoding through our runner and attention backend (CPU emulation).

Greedy speculative decoding has an exact oracle: whatever the draft proposes, temperature-0
output equals the output without speculation token for token. Random sampling must keep the
target distribution (rejection sampling, Leviathan et al. arXiv:2211.17192), checked against
HF transformers' float32 distribution with a chi-square test.

Engines (built one after another): a reference without speculation (eager), n-gram eager and
n-gram with FULL_DECODE_ONLY ACL graphs whose capture sizes are multiples of the verification
query length 1 + k (a uniform decode batch of 3 requests, 12 tokens, pads into the 16 graph).
Prompts repeat themselves so that n-gram drafts exist and are accepted.
"""

from __future__ import annotations

import re

import pytest
from _graph_eager_ref import engine_wrappers, replays
from _serving_helpers import chi_square_vs_reference, hf_next_logits, reference_probs
from engine import close_llm, make_llm

K = 3
NGRAM = {"method": "ngram", "num_speculative_tokens": K, "prompt_lookup_max": 3,
         "prompt_lookup_min": 2}
PROMPTS = [
    "one two three four five six seven eight. one two three four five six seven eight. one two",
    "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3,",
    "The cat sat on the mat. The cat sat on the mat. The cat",
]
MAX_TOKENS = 24
REGEX = r"(one|two|three)( (one|two|three)){5}"
# 17 tokens: with block_size 16 every draw after the first reads the first 16 from the prefix
# cache and computes one prompt token; ", " repeats, so n-gram drafts the sampled position
CHI_PROMPT = "A list of numbers: 5, 1, 2, 1,"
CHI_BLOCK = 16
DRAWS, TOP_K, P_MIN = 2000, 20, 0.001
EXTRA_DRAWS = 100  # draws whose token 1 is not the most likely one (HF: P = 0.98) are dropped


def _greedy(**kw):
    from vllm import SamplingParams

    return SamplingParams(temperature=0, max_tokens=MAX_TOKENS, ignore_eos=True, **kw)


def _mixed_params():
    """One batch: structured output, penalties, and two plain greedy requests."""
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    return [
        SamplingParams(temperature=0, max_tokens=MAX_TOKENS,
                       structured_outputs=StructuredOutputsParams(regex=REGEX)),
        _greedy(repetition_penalty=1.3, frequency_penalty=0.4, presence_penalty=0.2),
        _greedy(),
    ]


def _tokens(outputs) -> list[list[int]]:
    return [list(o.outputs[0].token_ids) for o in outputs]


def _spec_counters(llm) -> dict[str, float]:
    """vLLM's own spec-decode counters (``vllm/v1/metrics``) of this engine."""
    out = {}
    for m in llm.get_metrics():
        if m.name.startswith("vllm:spec_decode_num_") and hasattr(m, "value"):
            out[m.name[len("vllm:spec_decode_num_"):]] = m.value
    return out


@pytest.fixture(scope="module")
def reference(model_path):
    """Greedy tokens without speculation: the plain prompts and the mixed batch."""
    llm = make_llm(model_path, max_model_len=512)
    try:
        plain = _tokens(llm.generate(PROMPTS, _greedy(), use_tqdm=False))
        mixed = _tokens(llm.generate(PROMPTS, _mixed_params(), use_tqdm=False))
    finally:
        close_llm(llm)
    return {"plain": plain, "mixed": mixed}


_open: list = []  # the n-gram eager engine while it is up (the graph fixture closes it first)


def _close_eager() -> None:
    while _open:
        close_llm(_open.pop())


@pytest.fixture(scope="module")
def ngram_eager(model_path, reference):
    llm = make_llm(model_path, max_model_len=512, speculative_config=NGRAM, block_size=CHI_BLOCK,
                   max_num_seqs=256, disable_log_stats=False)
    _open.append(llm)
    yield llm
    _close_eager()


def test_greedy_equals_no_speculation_and_drafts_are_accepted(ngram_eager, reference):
    before = _spec_counters(ngram_eager)
    got = _tokens(ngram_eager.generate(PROMPTS, _greedy(), use_tqdm=False))
    after = _spec_counters(ngram_eager)
    assert got == reference["plain"]
    drafted = after["draft_tokens"] - before.get("draft_tokens", 0)
    accepted = after["accepted_tokens"] - before.get("accepted_tokens", 0)
    assert 0 < accepted <= drafted
    print(f"n-gram acceptance rate {accepted / drafted:.2f} ({accepted:.0f}/{drafted:.0f})")


def test_mixed_batch_gets_what_each_request_asked_for(ngram_eager, reference):
    """Structured output, penalties and plain requests verified in the same steps."""
    outs = ngram_eager.generate(PROMPTS, _mixed_params(), use_tqdm=False)
    assert re.fullmatch(REGEX, outs[0].outputs[0].text), outs[0].outputs[0].text
    assert _tokens(outs) == reference["mixed"]


def test_random_sampling_keeps_the_target_distribution(ngram_eager, oracle):
    """Token 2 (the first one verified against an n-gram draft) given the most likely token 1,
    over >= 2000 draws, against HF float32 softmax with top-k 20 (chi-square, p > 0.001).
    After the prompt and token 1 " ", the context ends with "1, " which occurred before "2",
    so n-gram drafts "2 ..." for token 2: accepted or rejected (recovered token) by sampling.
    All draws are one request with ``n`` samples; the prompt is one token longer than a KV
    block, so each draw computes 1 prompt token and one 1 + k verification step."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    ids = oracle.encode_text(CHI_PROMPT)
    assert len(ids) == CHI_BLOCK + 1, f"{len(ids)} tokens: one full KV block + 1 keeps draws cheap"
    first = int(hf_next_logits(oracle, ids).argmax())
    before = _spec_counters(ngram_eager)
    params = SamplingParams(temperature=1.0, top_k=TOP_K, max_tokens=2, ignore_eos=True,
                            n=DRAWS + EXTRA_DRAWS, seed=1234)
    out = ngram_eager.generate([TokensPrompt(prompt_token_ids=ids)], params, use_tqdm=False)[0]
    drafted = _spec_counters(ngram_eager)["draft_tokens"] - before.get("draft_tokens", 0)
    assert drafted > 0, "n-gram proposed no drafts for the sampled position"
    seconds = [c.token_ids[1] for c in out.outputs if c.token_ids[0] == first]
    assert len(seconds) >= DRAWS, f"only {len(seconds)} draws began with token {first}"
    ref = reference_probs(hf_next_logits(oracle, ids + [first]), top_k=TOP_K)
    stat, p, bins = chi_square_vs_reference(seconds[:DRAWS], ref)
    print(f"chi-square {stat:.1f} over {bins} bins, p = {p:.4f}")
    assert p > P_MIN


@pytest.fixture(scope="module")
def ngram_graph(model_path, ngram_eager):
    from _graph_eager_ref import graph_llm

    _close_eager()  # one engine at a time
    llm = graph_llm(model_path, "FULL_DECODE_ONLY", speculative_config=NGRAM,
                    enable_prefix_caching=True)
    yield llm
    close_llm(llm)


def test_graph_mode_greedy_equals_no_speculation(ngram_graph, reference):
    wrappers = engine_wrappers(ngram_graph)
    sizes = sorted({d.num_tokens for w in wrappers for d in w.entries})
    assert sizes and all(s % (1 + K) == 0 for s in sizes), sizes
    start = replays(wrappers)
    got = _tokens(ngram_graph.generate(PROMPTS, _greedy(), use_tqdm=False))
    assert got == reference["plain"]
    assert replays(wrappers) > start, "no FULL decode graph was replayed"


def test_graph_mode_mixed_batch_gets_what_each_request_asked_for(ngram_graph, reference):
    """The mixed batch (structured output, penalties, plain) through FULL decode graphs: the
    grammar bitmask and the penalties apply to the verified tokens as in eager mode."""
    outs = ngram_graph.generate(PROMPTS, _mixed_params(), use_tqdm=False)
    assert re.fullmatch(REGEX, outs[0].outputs[0].text), outs[0].outputs[0].text
    assert _tokens(outs) == reference["mixed"]
