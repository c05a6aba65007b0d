# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""A per-request seed seeds once, not every step.

``temperature=1.0, top_p=1, max_tokens=64``: (a) seed 1234 twice alone; (b) seed 1234 in a batch
with 7 unseeded requests; (c) seed 1235; (d) ``n=4`` with seed 1234. Right: (a) and (b)
identical; (c) differs; (d)'s four samples not all equal. (e) 300 requests with distinct seeds
and ``max_tokens=2``: for the most frequent first token, the second token's distribution matches
the reference conditional distribution (softmax of HF transformers' logits after prompt + that
token), chi-square p > 0.001. A generator re-seeded at every step would reuse the first step's
noise at the second step and skew that distribution.
"""

from __future__ import annotations

from collections import Counter

import pytest
from _serving_helpers import chi_square_vs_reference, hf_next_logits, reference_probs
from engine import close_llm, make_llm

P_MIN = 0.001


@pytest.fixture(scope="module")
def llm(model_path):
    engine = make_llm(model_path, max_model_len=256, max_num_seqs=64)
    yield engine
    close_llm(engine)


@pytest.fixture(scope="module")
def prompt(oracle):
    return oracle.encode_text("He opened the door and saw a")


def _gen(llm, prompts, params):
    from vllm.inputs import TokensPrompt

    return llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params,
                        use_tqdm=False)


def _params(**kw):
    from vllm import SamplingParams

    base = dict(temperature=1.0, top_p=1.0, max_tokens=64, ignore_eos=True)
    base.update(kw)
    return SamplingParams(**base)


def test_seed_semantics_abcd(llm, prompt):
    a1 = _gen(llm, [prompt], _params(seed=1234))[0].outputs[0].token_ids
    a2 = _gen(llm, [prompt], _params(seed=1234))[0].outputs[0].token_ids
    assert a1 == a2, "(a) the same seed alone gave different samples"

    batch = _gen(llm, [prompt] * 8, [_params(seed=1234)] + [_params() for _ in range(7)])
    assert batch[0].outputs[0].token_ids == a1, "(b) batching with unseeded requests changed it"
    unseeded = [o.outputs[0].token_ids for o in batch[1:]]
    assert len({tuple(t) for t in unseeded}) > 1, "unseeded requests all drew the same sample"

    c = _gen(llm, [prompt], _params(seed=1235))[0].outputs[0].token_ids
    assert c != a1, "(c) a different seed gave the same 64 tokens"

    d = _gen(llm, [prompt], _params(seed=1234, n=4))[0].outputs
    assert len(d) == 4
    assert len({tuple(s.token_ids) for s in d}) > 1, "(d) n=4 with a seed gave 4 equal samples"


def test_second_token_distribution_with_distinct_seeds(llm, oracle):
    prompt = oracle.encode_text("Once upon a time")
    outs = _gen(llm, [prompt] * 300,
                [_params(seed=10_000 + i, max_tokens=2) for i in range(300)])
    pairs = [tuple(o.outputs[0].token_ids) for o in outs]
    assert all(len(p) == 2 for p in pairs)
    first = Counter(p[0] for p in pairs)

    # The first token's own distribution is the reference one.
    ref1 = reference_probs(hf_next_logits(oracle, prompt))
    _, p1, _ = chi_square_vs_reference([p[0] for p in pairs], ref1)
    assert p1 > P_MIN, f"first-token distribution off: p={p1:.2e}"

    top, count = first.most_common(1)[0]
    assert count >= 150, "prompt no longer concentrates the first token; pick another"
    seconds = [p[1] for p in pairs if p[0] == top]
    ref2 = reference_probs(hf_next_logits(oracle, prompt + [top]))
    stat, p2, bins = chi_square_vs_reference(seconds, ref2)
    assert bins >= 5, "too few bins for the conditional test to have power"
    assert p2 > P_MIN, f"second-token distribution off (chi2={stat:.1f}, bins={bins}, p={p2:.2e})"
