# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Helpers for the serving-correctness e2e tests (sampling, logprobs, seeds, prefix caching).

The reference side is independent of vLLM: next-token logits come from HF transformers' forward
pass (float32, eager attention) on the same checkpoint, and the sampling transforms below are
written from vLLM's documented ``SamplingParams`` semantics (docstrings of
``vllm/sampling_params.py``), not from its sampler code:

- ``temperature``: logits are divided by it before the softmax;
- ``min_p``: a token is kept when its probability (after temperature) is at least
  ``min_p`` times the most likely token's probability;
- ``top_k``: only the ``k`` most likely tokens are kept;
- ``top_p``: the smallest set of most likely tokens whose cumulative probability reaches ``p``
  is kept (nucleus); the others are dropped and the rest renormalised.
vLLM applies them in the order temperature, min_p, top_k, top_p.
"""

from __future__ import annotations

from collections import Counter

import torch


@torch.inference_mode()
def hf_next_logits(oracle, prompt_ids: list[int]) -> torch.Tensor:
    """HF float32 logits for the token after ``prompt_ids``; shape ``[vocab]``."""
    out = oracle.model(input_ids=torch.tensor([prompt_ids], dtype=torch.long))
    return out.logits[0, -1].to(torch.float32)


@torch.inference_mode()
def hf_all_logits(oracle, ids: list[int]) -> torch.Tensor:
    """HF float32 logits at every position of ``ids``; shape ``[len(ids), vocab]``
    (row ``i`` predicts token ``i + 1``)."""
    out = oracle.model(input_ids=torch.tensor([ids], dtype=torch.long))
    return out.logits[0].to(torch.float32)


def reference_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int = 0,
                    top_p: float = 1.0, min_p: float = 0.0) -> torch.Tensor:
    """Sampling distribution over the vocabulary (float64, sums to 1) for ``logits [vocab]``
    under vLLM's documented semantics (module docstring)."""
    probs = torch.softmax(logits.double() / temperature, dim=-1)
    if min_p > 0.0:
        probs = torch.where(probs >= min_p * probs.max(), probs, torch.zeros_like(probs))
    if top_k > 0:
        kth = torch.topk(probs, top_k).values[-1]
        probs = torch.where(probs >= kth, probs, torch.zeros_like(probs))
    probs = probs / probs.sum()
    if top_p < 1.0:
        sorted_p, order = torch.sort(probs, descending=True)
        before = torch.cumsum(sorted_p, 0) - sorted_p  # mass of strictly more likely tokens
        keep_sorted = before < top_p
        keep = torch.zeros_like(keep_sorted)
        keep[order] = keep_sorted
        probs = torch.where(keep, probs, torch.zeros_like(probs))
    return probs / probs.sum()


def nucleus_margin(logits: torch.Tensor, temperature: float, top_p: float) -> float:
    """Distance of ``top_p`` from the nearest cumulative-probability step (how far the nucleus
    is from changing size); tests assert it is large so float noise cannot move the boundary."""
    probs = torch.softmax(logits.double() / temperature, dim=-1)
    cum = torch.cumsum(torch.sort(probs, descending=True).values, 0)
    return float((cum - top_p).abs().min())


def chi_square_vs_reference(samples: list[int], ref: torch.Tensor, min_expected: float = 5.0):
    """Pearson chi-square of ``samples`` (token ids) against ``ref [vocab]`` probabilities.

    Tokens whose expected count is at least ``min_expected`` get their own bin; the remaining
    tokens with non-zero reference probability share one tail bin (kept only when its expected
    count reaches ``min_expected``, else merged into the smallest bin). A sample of a token with
    zero reference probability raises ``AssertionError`` (it is outside the allowed support).

    Returns ``(statistic, p_value, num_bins)``.
    """
    from scipy.stats import chisquare

    n = len(samples)
    counts = Counter(samples)
    outside = {t: c for t, c in counts.items() if float(ref[t]) == 0.0}
    assert not outside, f"sampled tokens outside the reference support: {outside}"
    expected = ref.double() * n
    big = torch.nonzero(expected >= min_expected).flatten().tolist()
    obs = [counts.get(t, 0) for t in big]
    exp = [float(expected[t]) for t in big]
    tail_exp = n - sum(exp)
    tail_obs = n - sum(obs)
    if tail_exp >= min_expected:
        obs.append(tail_obs)
        exp.append(tail_exp)
    elif tail_exp > 0 or tail_obs > 0:
        i = min(range(len(exp)), key=exp.__getitem__)
        obs[i] += tail_obs
        exp[i] += tail_exp
    assert len(obs) >= 2, "distribution too peaked for a chi-square test: pick another prompt"
    scale = sum(obs) / sum(exp)  # exact renormalisation against float rounding
    stat, p = chisquare(obs, [e * scale for e in exp])
    return float(stat), float(p), len(obs)


def token_prompts(ids: list[int], count: int):
    """``count`` copies of one token-id prompt (vLLM ``TokensPrompt``s)."""
    from vllm.inputs import TokensPrompt

    return [TokensPrompt(prompt_token_ids=list(ids)) for _ in range(count)]


def first_tokens(outputs) -> list[int]:
    """First generated token of every completion of every ``RequestOutput``."""
    return [c.token_ids[0] for o in outputs for c in o.outputs]
