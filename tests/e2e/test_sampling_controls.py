# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Deterministic sampling controls through our runner, against HF transformers + vLLM's docs.

- Penalties (greedy, so the chosen token is the argmax of the penalised logits). Reference:
  HF float32 logits at every step of vLLM's own output (teacher forcing), penalised with the
  formulas ``SamplingParams`` documents: repetition penalty ``r`` over tokens seen in the prompt
  or the output so far (positive logits divided by ``r``, negative ones multiplied: the CTRL
  rule), frequency penalty ``f`` (``f`` x count of the token in the output so far subtracted)
  and presence penalty ``p`` (``p`` subtracted once the token appears in the output).
- Stop strings, ``stop_token_ids``, ``ignore_eos``, ``max_tokens``, ``min_tokens``: against the
  HF greedy continuation (``HFOracle.greedy``) and vLLM's documented stop rules.
- Structured output (JSON schema, regex, choice, grammar) in one batch with an unconstrained
  request: every output valid, the unconstrained one unchanged, the engine keeps serving.

Everything runs with async scheduling on and off (one engine each).
"""

from __future__ import annotations

import json
import re

import pytest
import torch
from _serving_helpers import hf_all_logits
from engine import close_llm, make_llm

EOS = 2  # <|im_end|>, the checkpoint's generation_config eos_token_id
TIE = 1e-3


@pytest.fixture(scope="module", params=[True, False], ids=["async-sched", "sync-sched"])
def llm(request, model_path):
    """The whole module runs twice: with vLLM 0.32's async scheduling and without it."""
    engine = make_llm(model_path, max_model_len=512, max_num_seqs=16,
                      async_scheduling=request.param)
    assert engine.llm_engine.vllm_config.scheduler_config.async_scheduling == request.param
    yield engine
    close_llm(engine)


def _gen(llm, prompts, params):
    from vllm.inputs import TokensPrompt

    return llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params,
                        use_tqdm=False)


def _sp(**kw):
    from vllm import SamplingParams

    return SamplingParams(**{"temperature": 0.0, **kw})


# ---------------------------------------------------------------- penalties

def _penalised(logits: torch.Tensor, prompt: list[int], out: list[int], rep: float,
               freq: float, pres: float) -> torch.Tensor:
    x = logits.double().clone()
    if rep != 1.0:
        seen = torch.zeros_like(x, dtype=torch.bool)
        seen[list(set(prompt) | set(out))] = True
        x = torch.where(seen & (x > 0), x / rep, x)
        x = torch.where(seen & (x <= 0), x * rep, x)
    counts = torch.zeros_like(x)
    for t in out:
        counts[t] += 1
    return x - freq * counts - pres * (counts > 0).double()


PENALTIES = {
    "none": dict(),
    "repetition": dict(repetition_penalty=1.6),
    "frequency": dict(frequency_penalty=1.5),
    "presence": dict(presence_penalty=2.0),
    "all": dict(repetition_penalty=1.3, frequency_penalty=0.7, presence_penalty=0.7),
}


@pytest.fixture(scope="module")
def penalty_runs(llm, oracle):
    prompt = oracle.encode_text("Count with me: one two three, one two three, one two three, one")
    names = list(PENALTIES)
    outs = _gen(llm, [prompt] * len(names),
                [_sp(max_tokens=24, ignore_eos=True, **PENALTIES[n]) for n in names])
    return prompt, {n: list(o.outputs[0].token_ids) for n, o in zip(names, outs, strict=True)}


@pytest.mark.parametrize("name", list(PENALTIES))
def test_penalties_match_documented_formulas(penalty_runs, oracle, name):
    prompt, runs = penalty_runs
    out = runs[name]
    knobs = PENALTIES[name]
    rep = knobs.get("repetition_penalty", 1.0)
    freq = knobs.get("frequency_penalty", 0.0)
    pres = knobs.get("presence_penalty", 0.0)
    logits = hf_all_logits(oracle, prompt + out)
    changed = 0
    for i, tok in enumerate(out):
        row = logits[len(prompt) - 1 + i]
        pen = _penalised(row, prompt, out[:i], rep, freq, pres)
        gap = float(pen.max() - pen[tok])
        assert gap <= TIE, f"{name}: step {i} chose {tok}, penalised argmax {int(pen.argmax())}"
        changed += int(int(row.argmax()) != tok)
    if name != "none":
        assert changed > 0, f"{name}: the penalty never changed a choice (test has no power)"


def test_penalties_are_per_request(penalty_runs):
    """The batch mixes penalised and plain requests; the plain one repeats (the prompt invites
    it) while the penalised ones differ from it."""
    _, runs = penalty_runs
    assert all(runs[n] != runs["none"] for n in PENALTIES if n != "none")


# ---------------------------------------------------------------- stops and lengths

@pytest.fixture(scope="module")
def text_ref(oracle):
    prompt = oracle.encode_text("The history of the printing press begins in")
    return prompt, oracle.greedy(prompt, 24)


@pytest.fixture(scope="module")
def chat_ref(oracle):
    prompt = oracle.encode_chat([{"role": "user", "content": "What is the capital of France?"}])
    ref = oracle.greedy(prompt, 40)
    assert EOS in ref.tokens[:30], "the chat prompt no longer ends its answer early"
    return prompt, ref, ref.tokens.index(EOS)


def test_max_tokens(llm, text_ref):
    prompt, ref = text_ref
    out = _gen(llm, [prompt], _sp(max_tokens=7, ignore_eos=True))[0].outputs[0]
    assert list(out.token_ids) == ref.tokens[:7] and out.finish_reason == "length"


def test_stop_token_ids(llm, text_ref):
    prompt, ref = text_ref
    k = next(i for i in range(4, 20) if ref.tokens[i] not in ref.tokens[:i])
    out = _gen(llm, [prompt], _sp(max_tokens=24, stop_token_ids=[ref.tokens[k]]))[0].outputs[0]
    assert list(out.token_ids) == ref.tokens[:k + 1]
    assert out.finish_reason == "stop" and out.stop_reason == ref.tokens[k]


def test_stop_string(llm, oracle, text_ref):
    prompt, ref = text_ref
    full = oracle.tokenizer.decode(ref.tokens, skip_special_tokens=True)
    words = full.split()
    stop = next(w for w in words[3:] if len(w) > 3 and full.count(w) == 1)
    out = _gen(llm, [prompt], _sp(max_tokens=24, stop=[stop]))[0].outputs[0]
    assert out.text == full[: full.index(stop)]
    assert out.finish_reason == "stop" and out.stop_reason == stop
    both = _gen(llm, [prompt], _sp(max_tokens=24, stop=[stop],
                                   include_stop_str_in_output=True))[0].outputs[0]
    assert both.text == full[: full.index(stop) + len(stop)]


def test_eos_and_ignore_eos(llm, chat_ref):
    prompt, ref, e = chat_ref
    stopped, ignored = _gen(llm, [prompt, prompt],
                            [_sp(max_tokens=40), _sp(max_tokens=40, ignore_eos=True)])
    s, g = stopped.outputs[0], ignored.outputs[0]
    assert list(s.token_ids) == ref.tokens[:e + 1] and s.finish_reason == "stop"
    assert len(g.token_ids) == 40 and g.finish_reason == "length"
    assert list(g.token_ids[:e + 1]) == ref.tokens[:e + 1]


def test_min_tokens_masks_eos(llm, chat_ref):
    prompt, ref, e = chat_ref
    out = _gen(llm, [prompt], _sp(max_tokens=40, min_tokens=e + 4))[0].outputs[0]
    toks = list(out.token_ids)
    assert len(toks) >= e + 4
    assert EOS not in toks[:e + 4]
    assert toks[:e] == ref.tokens[:e]
    # At the step where EOS was the argmax, the next best token is chosen instead.
    masked = ref.logprobs[e].clone()
    masked[EOS] = float("-inf")
    assert float(masked.max() - masked[toks[e]]) <= TIE


# ---------------------------------------------------------------- structured output

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 12},
                   "likes_cats": {"type": "boolean"}},
    "required": ["name", "likes_cats"],
    "additionalProperties": False,
}
REGEX = r"[0-9]{3}-[0-9]{4}"
CHOICES = ["red", "green", "blue"]
GRAMMAR = 'root ::= answer " " answer\nanswer ::= "yes" | "no" | "maybe"'


def _structured(**kw):
    from vllm.sampling_params import StructuredOutputsParams

    return _sp(max_tokens=48, structured_outputs=StructuredOutputsParams(**kw))


def test_structured_outputs_mixed_batch(llm, oracle, text_ref):
    ask = oracle.encode_chat
    prompts = [ask([{"role": "user", "content": "Describe a person as JSON."}]),
               ask([{"role": "user", "content": "Give me a phone number."}]),
               ask([{"role": "user", "content": "Pick a color."}]),
               ask([{"role": "user", "content": "Answer twice: is the sky blue?"}]),
               text_ref[0]]
    params = [_structured(json=SCHEMA), _structured(regex=REGEX), _structured(choice=CHOICES),
              _structured(grammar=GRAMMAR), _sp(max_tokens=24, ignore_eos=True)]
    outs = [o.outputs[0] for o in _gen(llm, prompts, params)]

    doc = json.loads(outs[0].text)
    assert set(doc) == {"name", "likes_cats"}
    assert isinstance(doc["name"], str) and len(doc["name"]) <= 12
    assert isinstance(doc["likes_cats"], bool)
    assert re.fullmatch(REGEX, outs[1].text), outs[1].text
    assert outs[2].text in CHOICES
    a, b = outs[3].text.split(" ")
    assert {a, b} <= {"yes", "no", "maybe"}
    # The unconstrained request in the same batch is unaffected by the others' bitmasks.
    assert list(outs[4].token_ids) == text_ref[1].tokens


def test_engine_serves_after_rejected_structured_request(llm, text_ref):
    with pytest.raises(Exception):  # noqa: B017 - vLLM's validation error type is not public API
        _gen(llm, [text_ref[0]], _structured(regex="(unclosed"))
    out = _gen(llm, [text_ref[0]], _sp(max_tokens=24, ignore_eos=True))[0].outputs[0]
    assert list(out.token_ids) == text_ref[1].tokens
