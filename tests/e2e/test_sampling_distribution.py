# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Random sampling through our runner, at the distribution level.

An out-of-tree platform samples with vLLM's native (GPU-path) sampler, not its CPU one, so each
knob is checked by drawing 2,000 first tokens after one fixed prompt and comparing their counts
with the reference distribution: softmax of HF transformers' float32 logits, transformed by
vLLM's documented semantics (``_serving_helpers.reference_probs``). Pearson chi-square, p > 0.001.
A token drawn outside the reference support (e.g. beyond top-k) fails at once.

The prompt is one token, so each draw costs one token of prefill.
"""

from __future__ import annotations

import pytest
from _serving_helpers import (
    chi_square_vs_reference,
    first_tokens,
    hf_next_logits,
    nucleus_margin,
    reference_probs,
    token_prompts,
)
from engine import close_llm, make_llm

DRAWS = 2000
P_MIN = 0.001
CASES = {
    "temperature-1.5": dict(temperature=1.5),
    "top_k-8": dict(temperature=1.0, top_k=8),
    "top_p-0.615": dict(temperature=1.0, top_p=0.615),
    "min_p-0.04": dict(temperature=1.0, min_p=0.04),
}


@pytest.fixture(scope="module")
def llm(model_path):
    engine = make_llm(model_path, max_model_len=128, max_num_seqs=256,
                      enable_prefix_caching=False)
    yield engine
    close_llm(engine)


@pytest.fixture(scope="module")
def prompt(oracle):
    ids = oracle.encode_text("The")
    assert len(ids) == 1
    return ids


@pytest.fixture(scope="module")
def logits(oracle, prompt):
    return hf_next_logits(oracle, prompt)


@pytest.mark.parametrize("case", list(CASES))
def test_first_token_distribution(llm, prompt, logits, case):
    from vllm import SamplingParams

    knobs = CASES[case]
    ref = reference_probs(logits, **knobs)
    if "top_p" in knobs:
        assert nucleus_margin(logits, knobs["temperature"], knobs["top_p"]) > 0.01
    if "min_p" in knobs:  # no token sits on the min-p threshold
        probs = (logits.double() / knobs["temperature"]).softmax(-1)
        rel = probs / probs.max()
        assert float((rel - knobs["min_p"]).abs().min()) > 1e-3
    if case == "temperature-1.5":
        # n > 1 path: 8 requests x n=250 samples.
        outs = llm.generate(token_prompts(prompt, 8),
                            SamplingParams(n=DRAWS // 8, max_tokens=1, **knobs), use_tqdm=False)
    else:
        outs = llm.generate(token_prompts(prompt, DRAWS), SamplingParams(max_tokens=1, **knobs),
                            use_tqdm=False)
    samples = first_tokens(outs)
    assert len(samples) == DRAWS
    stat, p, bins = chi_square_vs_reference(samples, ref)
    assert bins >= 4, f"{case}: too few bins ({bins}) for the test to have power"
    assert p > P_MIN, f"{case}: chi2={stat:.1f} over {bins} bins, p={p:.2e}"
    if "top_k" in knobs or "top_p" in knobs or "min_p" in knobs:
        # The truncation is not vacuous: the support is much smaller than the vocabulary.
        assert int((ref > 0).sum()) < 100


def test_reference_detects_a_wrong_temperature(logits):
    """Power check of the statistic itself: draws from T=1.0 are rejected against T=1.5."""
    import torch

    gen = torch.Generator().manual_seed(0)
    wrong = torch.multinomial(reference_probs(logits, temperature=1.0), DRAWS, True, generator=gen)
    _, p, _ = chi_square_vs_reference(wrong.tolist(), reference_probs(logits, temperature=1.5))
    assert p < P_MIN
