# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Logprobs of requested token ids (``logprob_token_ids``, ``prompt_logprob_token_ids``).

One batch of four requests in one engine step: A greedy with ``logprob_token_ids`` (5 ids),
B sampled (``temperature=0.8, seed=3``) with 2 other ids, C with ``logprobs=5`` and no ids
(the top-k columns of the same step), D with ``prompt_logprob_token_ids`` (padding -1 in one
row). A second engine runs n-gram speculative decoding (k = 3) with A's parameters, so the
requested ids are scored on verification rows as well (accepted drafts).
Right: each generated position of A and B holds exactly the sampled token and the requested
ids, each logprob equal to log_softmax of HF transformers' forward pass (float32, the same
weights, teacher-forced on the generated tokens) within 1e-3 — what vLLM 0.33's V1 sampler
returned and vLLM 0.34's MRv2 returns (``vllm/v1/worker/gpu/sample/logprob.py``); C's top-5
are HF's top-5; D's ``prompt_token_id_logprobs`` row i equals HF's log_softmax at row
``i`` (predicting prompt token i + 1) at its ids, ``-inf`` where the id is -1; the
speculative engine accepts drafts and gives A's tokens and logprobs.
On vLLM 0.33 (V1 runner) only A and B are checked: its sampler lets requested ids override a
top-k request of the same batch, its rejection sampler returns no logprobs for requested ids,
and it refuses ``prompt_logprob_token_ids`` (all three upstream behaviours; skipped with reason).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from _serving_helpers import hf_all_logits
from engine import close_llm, make_llm

TOL = 1e-3
MAX_TOKENS = 12
IDS_A = [28, 260, 1115, 49151, 13]
IDS_B = [314, 2]
PROMPT_A = "one two three four five six seven eight. one two three four five six seven eight. one"
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3,
         "prompt_lookup_min": 2}


def _params():
    from vllm import SamplingParams

    return {
        "A": SamplingParams(temperature=0, max_tokens=MAX_TOKENS, ignore_eos=True,
                            logprob_token_ids=IDS_A),
        "B": SamplingParams(temperature=0.8, seed=3, max_tokens=MAX_TOKENS, ignore_eos=True,
                            logprob_token_ids=IDS_B),
        "C": SamplingParams(temperature=0, max_tokens=MAX_TOKENS, ignore_eos=True, logprobs=5),
    }


@pytest.fixture(scope="module")
def prompts(oracle):
    return {
        "A": oracle.encode_text(PROMPT_A),
        "B": oracle.encode_chat([{"role": "user", "content": "Name a colour."}]),
        "C": oracle.encode_chat([{"role": "user", "content": "Name a fruit."}]),
        "D": oracle.encode_text("The capital of France is Paris, and the capital of Spain is"),
    }


def _prompt_rows(prompt: list[int]) -> np.ndarray:
    """``prompt_logprob_token_ids`` for D: one row per scored prompt row (len - 1), three ids
    each: the true next token, token 0, and a different id per row; -1 (padding) in row 1."""
    rows = np.array([[prompt[i + 1], 0, 100 + i] for i in range(len(prompt) - 1)],
                    dtype=np.int64)
    rows[1, 2] = -1
    return rows


@pytest.fixture(scope="module")
def outputs(model_path, prompts):
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    params = _params()
    params["D"] = SamplingParams(temperature=0, max_tokens=1,
                                 prompt_logprob_token_ids=_prompt_rows(prompts["D"]))
    names = list(params)
    llm = make_llm(model_path, max_model_len=512, max_num_seqs=4)
    try:
        got = llm.generate([TokensPrompt(prompt_token_ids=prompts[n]) for n in names],
                           [params[n] for n in names], use_tqdm=False)
    finally:
        close_llm(llm)
    return dict(zip(names, got, strict=True))


@pytest.fixture(scope="module")
def spec_output(model_path, prompts):
    from vllm.inputs import TokensPrompt

    llm = make_llm(model_path, max_model_len=512, max_num_seqs=4, speculative_config=NGRAM,
                   disable_log_stats=False)
    try:
        out = llm.generate([TokensPrompt(prompt_token_ids=prompts["A"])], _params()["A"],
                           use_tqdm=False)[0]
        accepted = sum(m.value for m in llm.get_metrics()
                       if m.name == "vllm:spec_decode_num_accepted_tokens" and hasattr(m, "value"))
        return out, accepted
    finally:
        close_llm(llm)


def _reference(oracle, prompt: list[int], tokens: list[int]) -> torch.Tensor:
    """HF log_softmax at each generated position: row i predicts generated token i."""
    ref = torch.log_softmax(hf_all_logits(oracle, prompt + tokens), dim=-1)
    return ref[len(prompt) - 1: len(prompt) - 1 + len(tokens)]


def _check_requested(sample, ref: torch.Tensor, ids: list[int]) -> None:
    assert len(sample.logprobs) == len(sample.token_ids) == MAX_TOKENS
    for i, (tok, position) in enumerate(zip(sample.token_ids, sample.logprobs, strict=True)):
        assert set(position) == {tok, *ids}, (i, tok, sorted(position))
        for t, entry in position.items():
            assert math.isfinite(entry.logprob), (i, t, entry)
            assert abs(entry.logprob - float(ref[i, t])) <= TOL, (i, t, entry, float(ref[i, t]))


@pytest.mark.parametrize("name, ids", [("A", IDS_A), ("B", IDS_B)])
def test_requested_ids_get_the_model_logprobs(outputs, prompts, oracle, name, ids):
    sample = outputs[name].outputs[0]
    _check_requested(sample, _reference(oracle, prompts[name], list(sample.token_ids)), ids)


def test_greedy_tokens_are_the_argmax(outputs, prompts, oracle):
    sample = outputs["A"].outputs[0]
    ref = _reference(oracle, prompts["A"], list(sample.token_ids))
    assert list(sample.token_ids) == ref.argmax(dim=-1).tolist()


def test_top_k_request_in_the_same_batch_keeps_its_top_k(outputs, prompts, oracle):
    sample = outputs["C"].outputs[0]
    ref = _reference(oracle, prompts["C"], list(sample.token_ids))
    for i, (tok, position) in enumerate(zip(sample.token_ids, sample.logprobs, strict=True)):
        assert tok in position
        top = sorted((e.rank, t, e.logprob) for t, e in position.items() if e.rank <= 5)
        assert [r for r, _, _ in top] == [1, 2, 3, 4, 5]
        want = torch.topk(ref[i], 5)
        for (_, t, v), rv in zip(top, want.values.tolist(), strict=True):
            assert abs(v - rv) <= TOL and abs(float(ref[i, t]) - v) <= TOL, (i, t, v, rv)


def test_prompt_token_id_logprobs(outputs, prompts, oracle):
    prompt = prompts["D"]
    rows = _prompt_rows(prompt)
    got = outputs["D"].prompt_token_id_logprobs
    assert got is not None
    got = np.asarray(got)
    assert got.shape == rows.shape
    ref = torch.log_softmax(hf_all_logits(oracle, prompt), dim=-1)
    for i, row in enumerate(rows):
        for j, t in enumerate(row.tolist()):
            if t < 0:
                assert got[i, j] == -math.inf, (i, j, got[i, j])
            else:
                assert abs(float(got[i, j]) - float(ref[i, t])) <= TOL, (i, j, t)


def test_requested_ids_with_speculative_decoding(spec_output, outputs, prompts, oracle):
    out, accepted = spec_output
    assert accepted > 0, "no draft accepted: the verification rows' path was not exercised"
    sample = out.outputs[0]
    assert list(sample.token_ids) == list(outputs["A"].outputs[0].token_ids)
    _check_requested(sample, _reference(oracle, prompts["A"], list(sample.token_ids)), IDS_A)
