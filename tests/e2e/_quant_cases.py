# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Shared body of the msModelSlim e2e modules (test_quant_*.py, test_simulated_npu_quant.py):
serve a checkpoint once per module, judge its greedy tokens against the independent oracle
(quant_oracle.py) and the float model, and build broken copies of a checkpoint.

The accuracy bars are the ones the quantization feature is specified with:

* greedy parity with a float64 oracle (the checkpoint's int8 arithmetic in float64, the rest of
  the model in float64): every one of the 8 prompts gives the same 32 greedy tokens, or its first
  difference is a near-tie, the oracle's top-1 and our token within 1e-3 nats (``greedy_parity``);
* W8A8_DYNAMIC only: teacher-forced top-1 agreement with the float model >= 0.9
  (``float_top1_agreement``, exact top-1: no tolerance).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

NEW = 32  # tokens per prompt
N_PROMPTS = 8
NEAR_TIE = 1e-3  # nats
ENGINE = dict(max_model_len=512, max_num_batched_tokens=512, max_num_seqs=8, enforce_eager=True,
              gpu_memory_utilization=0.5, seed=0)


def generate(llm, prompts, n=NEW) -> list[list[int]]:
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts],
                        SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True),
                        use_tqdm=False)
    return [list(o.outputs[0].token_ids) for o in outs]


FIRST_PROMPT = "The capital of France is"


def first_token_logprobs(llm, tokenizer_path) -> tuple[list[int], dict[int, float]]:
    """Top-5 log-probabilities of the first generated token after :data:`FIRST_PROMPT`."""
    from transformers import AutoTokenizer
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    ids = AutoTokenizer.from_pretrained(tokenizer_path)(FIRST_PROMPT).input_ids
    out = llm.generate([TokensPrompt(prompt_token_ids=ids)],
                       SamplingParams(temperature=0.0, max_tokens=1, logprobs=5), use_tqdm=False)
    return ids, {k: v.logprob for k, v in out[0].outputs[0].logprobs[0].items()}


FIRST_TOKEN_TOL = 5e-3  # nats
FIRST_TOKEN_NOISES = (1e-7, 3e-7, 1e-6)
"""Relative input noise of the oracle runs that may explain our first token: float32 rounding
(6e-8) up to what it accumulates to over a few hundred terms (a hidden size of 576)."""
FIRST_TOKEN_SEEDS = 16


def explaining_run(runs, ours: dict[int, float], tol: float = FIRST_TOKEN_TOL):
    """The ``(noise, seed)`` of the first oracle run in ``runs`` (``last_logprobs_under_noise``)
    whose log-probability of every token in ``ours`` is within ``tol`` of ours; None if none."""
    for noise, seed, lp in runs:
        if all(abs(val - float(lp[tok])) <= tol for tok, val in ours.items()):
            return noise, seed
    return None


def first_token_runs(float_path, quant_path, ids) -> list[tuple]:
    """The oracle's (float32 body, like the engine) first-token runs: exact, then perturbed."""
    import torch
    from quant_oracle import last_logprobs_under_noise, load_oracle

    with torch.inference_mode():
        return last_logprobs_under_noise(load_oracle(float_path, quant_path), ids,
                                         FIRST_TOKEN_NOISES, FIRST_TOKEN_SEEDS)


def assert_first_token_matches(float_path, quant_path, ids, ours: dict[int, float]) -> None:
    """Before any generated token feeds back, our top-5 log-probabilities are those of one oracle
    run (float32 body, like the engine) to 5e-3 nats: the exact run, or one whose quantizer
    inputs carry float32-sized relative noise (:data:`FIRST_TOKEN_NOISES`).

    Why not the exact run alone: an int8 rounding sits on a step edge now and then, and a last-bit
    difference between our float32 kernels and HF's flips it, which moves the result by a whole
    step (W8A8 static on an AMD EPYC box: 7042 at -0.347 vs the exact run's -0.309 nats, and
    precisely -0.347 in one 3e-7-noise run). On an Intel box both schemes matched the exact run
    to 1e-4. A wrong scale, offset or layout is explained by no run (``test_quant_oracle_band.py``)."""
    runs = first_token_runs(float_path, quant_path, ids)
    exact = runs[0][2]
    found = explaining_run(runs, ours)
    assert found is not None, (
        "no oracle run explains our first-token log-probabilities (token: ours, exact oracle): "
        + ", ".join(f"{tok}: {val:.4f}, {float(exact[tok]):.4f}" for tok, val in ours.items()))


@dataclass
class Parity:
    identical: int = 0
    near_ties: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def greedy_parity(float_path, quant_path, prompts, tokens) -> Parity:
    """Judge ``tokens`` (our greedy continuations of ``prompts``) by the float64 oracle.

    Teacher-forced on our tokens, the oracle's argmax at each position is the token its own
    greedy run would produce while the prefixes agree, so the first position where it differs
    from ours is the first difference of the two greedy runs; there its log-probability gap
    between its top-1 and our token decides near-tie (< :data:`NEAR_TIE`) or failure.
    """
    import torch
    from quant_oracle import load_oracle

    model = load_oracle(float_path, quant_path, dtype=torch.float64)
    result = Parity()
    with torch.inference_mode():
        for k, (prompt, ours) in enumerate(zip(prompts, tokens, strict=True)):
            assert len(ours) == NEW
            logits = model(input_ids=torch.tensor([list(prompt) + list(ours)]),
                           use_cache=False).logits[0]
            lp = torch.log_softmax(logits[len(prompt) - 1: len(prompt) - 1 + NEW], -1)
            diff = [i for i in range(NEW) if int(lp[i].argmax()) != ours[i]]
            if not diff:
                result.identical += 1
                continue
            i = diff[0]
            gap = float(lp[i].max() - lp[i, ours[i]])
            line = (f"prompt {k} pos {i}: ours {ours[i]}, oracle {int(lp[i].argmax())}, "
                    f"gap {gap:.4f} nats")
            (result.near_ties if gap < NEAR_TIE else result.failures).append(line)
    return result


def assert_greedy_parity(float_path, quant_path, prompts, tokens, label) -> None:
    r = greedy_parity(float_path, quant_path, prompts, tokens)
    assert not r.failures, (
        f"{label}: {r.identical}/{len(prompts)} identical over {NEW} tokens, "
        f"{len(r.near_ties)} near-ties; first differences beyond {NEAR_TIE} nats:\n  "
        + "\n  ".join(r.failures))


def float_top1_agreement(float_path, prompts, tokens) -> float:
    """Fraction of our tokens that are the float model's top-1, teacher-forced (HF float32)."""
    from _sim_npu import teacher_forced

    r = teacher_forced(float_path, prompts, tokens, tol=0.0)
    assert r.total == len(prompts) * NEW
    return r.rate


def broken_copy(ckpt: str, dest, edit_description=None, drop=(), replace=None) -> str:
    """A copy of msModelSlim checkpoint ``ckpt`` under ``dest`` with its description edited by
    ``edit_description(dict)``, tensors ``drop`` removed and ``replace`` (name -> tensor) swapped
    in; untouched files are symlinked."""
    from safetensors.torch import load_file, save_file

    os.makedirs(dest, exist_ok=True)
    for f in os.listdir(ckpt):
        src, dst = os.path.join(ckpt, f), os.path.join(dest, f)
        if f == "quant_model_description.json" and edit_description is not None:
            desc = json.loads(open(src).read())
            edit_description(desc)
            with open(dst, "w") as out:
                json.dump(desc, out)
        elif f.endswith(".safetensors") and (drop or replace):
            tensors = load_file(src)
            hit = set(tensors) & (set(drop) | set(replace or {}))
            if not hit:
                os.symlink(src, dst)
                continue
            for name in drop:
                tensors.pop(name, None)
            for name, t in (replace or {}).items():
                if name in tensors:
                    tensors[name] = t
            save_file(tensors, dst, metadata={"format": "pt"})
        elif not os.path.exists(dst):
            os.symlink(src, dst)
    return str(dest)


def assert_oracle_agrees(float_path, quant_path, prompts, tokens, label, min_rate=0.95):
    """Teacher-forced agreement with the oracle (float32 body) within its float32 rounding band
    (quant_oracle.teacher_forced): the simulated-NPU tier's check that the NPU branch computes
    the scheme, in bfloat16/float16 where the float64 bar above is out of reach."""
    from quant_oracle import load_oracle, teacher_forced

    agreed, total, misses = teacher_forced(load_oracle(float_path, quant_path), prompts, tokens)
    assert total == sum(len(t) for t in tokens) and total > 0
    assert agreed / total >= min_rate, (
        f"{label}: {agreed}/{total} positions agree with the oracle:\n  " + "\n  ".join(misses))
