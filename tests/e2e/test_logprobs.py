# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Logprobs are finite, sorted and raw.

Fixed prompt; run 1: ``temperature=0.8, top_p=0.95, n=2, seed=1, logprobs=20, max_tokens=16``;
run 2: the same with ``temperature=1.0, top_p=1.0``; both with ``prompt_logprobs=5``.
Right: every value finite and <= 0; each position's top-20 sorted descending; the sampled
token's logprob equals log_softmax of HF transformers' forward pass (float32, the same weights)
within 1e-3 — the *raw* model distribution, not the temperature/top-p processed one (vLLM 0.32's
default ``logprobs_mode="raw_logprobs"``); the first generated position's top-20 tokens and
values are identical in run 1 and run 2; each of the n=2 samples carries its own logprobs.
"""

from __future__ import annotations

import math

import pytest
import torch
from _serving_helpers import hf_all_logits
from engine import close_llm, make_llm

TOL = 1e-3
TOP = 20
RUNS = {
    "run1": dict(temperature=0.8, top_p=0.95),
    "run2": dict(temperature=1.0, top_p=1.0),
}


@pytest.fixture(scope="module")
def results(model_path, oracle):
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    prompt = oracle.encode_chat([{"role": "user", "content": "Name a fruit and describe it."}])
    llm = make_llm(model_path, max_model_len=512, max_num_seqs=4, max_logprobs=TOP)
    try:
        out = {}
        for name, knobs in RUNS.items():
            params = SamplingParams(n=2, seed=1, logprobs=TOP, prompt_logprobs=5, max_tokens=16,
                                    ignore_eos=True, **knobs)
            out[name] = llm.generate([TokensPrompt(prompt_token_ids=prompt)], params,
                                     use_tqdm=False)[0]
    finally:
        close_llm(llm)
    return prompt, out


def _ranked(position: dict) -> list[tuple[int, float]]:
    """(token id, logprob) of a position's top entries in rank order (rank 1 first)."""
    top = sorted((lp.rank, tok, lp.logprob) for tok, lp in position.items() if lp.rank <= TOP)
    return [(tok, val) for _, tok, val in top]


@pytest.mark.parametrize("run", list(RUNS))
def test_logprobs_finite_sorted_complete(results, run):
    _, out = results
    assert len(out[run].outputs) == 2
    for sample in out[run].outputs:
        assert len(sample.logprobs) == len(sample.token_ids) == 16
        for tok, position in zip(sample.token_ids, sample.logprobs, strict=True):
            assert tok in position, "the sampled token's own logprob is missing"
            values = [lp.logprob for lp in position.values()]
            assert all(math.isfinite(v) and v <= 0.0 for v in values), values
            ranked = _ranked(position)
            assert [r for r in sorted(lp.rank for lp in position.values())][:TOP] == \
                list(range(1, TOP + 1))
            vals = [v for _, v in ranked]
            assert vals == sorted(vals, reverse=True)


@pytest.mark.parametrize("run", list(RUNS))
def test_sampled_logprob_is_raw_model_logprob(results, oracle, run):
    prompt, out = results
    for sample in out[run].outputs:
        ids = prompt + list(sample.token_ids)
        ref = torch.log_softmax(hf_all_logits(oracle, ids), dim=-1)
        for i, (tok, position) in enumerate(zip(sample.token_ids, sample.logprobs, strict=True)):
            want = float(ref[len(prompt) - 1 + i, tok])
            assert abs(position[tok].logprob - want) <= TOL, (run, i, tok, position[tok], want)
            # The top-20 are the reference's own top-20 (ties within TOL aside).
            ref_top = torch.topk(ref[len(prompt) - 1 + i], TOP)
            got = _ranked(position)
            for (gt, gv), rv in zip(got, ref_top.values.tolist(), strict=True):
                assert abs(gv - rv) <= TOL and abs(float(ref[len(prompt) - 1 + i, gt]) - gv) <= TOL


def test_first_position_independent_of_sampling_params(results):
    _, out = results
    firsts = [_ranked(s.logprobs[0]) for run in RUNS for s in out[run].outputs]
    assert all(f == firsts[0] for f in firsts), "raw top-20 at step 0 changed with sampling knobs"


def test_each_sample_has_its_own_logprobs(results):
    _, out = results
    for run in RUNS:
        a, b = out[run].outputs
        assert a.logprobs is not b.logprobs
        if a.token_ids != b.token_ids:
            j = next(i for i, (x, y) in enumerate(zip(a.token_ids, b.token_ids, strict=True)) if x != y)
            assert a.token_ids[j] in a.logprobs[j] and b.token_ids[j] in b.logprobs[j]
            assert a.logprobs[j + 1:] != b.logprobs[j + 1:] or j == len(a.token_ids) - 1
    # With seed=1 at temperature 1.0 over 16 tokens the two samples differ (else n=2 would
    # have been served as one sample copied twice).
    assert out["run2"].outputs[0].token_ids != out["run2"].outputs[1].token_ids


def test_prompt_logprobs(results, oracle):
    prompt, out = results
    ref = torch.log_softmax(hf_all_logits(oracle, prompt), dim=-1)
    for run in RUNS:
        plp = out[run].prompt_logprobs
        assert len(plp) == len(prompt) and plp[0] is None
        for i in range(1, len(prompt)):
            position = plp[i]
            tok = prompt[i]
            assert tok in position
            values = [lp.logprob for lp in position.values()]
            assert all(math.isfinite(v) and v <= 0.0 for v in values)
            top = sorted((lp.rank, lp.logprob) for lp in position.values() if lp.rank <= 5)
            assert [r for r, _ in top] == [1, 2, 3, 4, 5]
            assert [v for _, v in top] == sorted((v for _, v in top), reverse=True)
            assert abs(position[tok].logprob - float(ref[i - 1, tok])) <= TOL, (i, tok)
    assert out["run1"].prompt_logprobs == out["run2"].prompt_logprobs
