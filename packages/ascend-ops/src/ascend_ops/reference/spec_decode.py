# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Reference speculative-decoding verification: rejection sampling with recovered and bonus tokens.

Semantics: vLLM 0.32 ``vllm/v1/sample/rejection_sampler.py`` (its ``rejection_greedy_sample``,
``rejection_random_sample`` and ``sample_recovered_tokens`` kernels), which follows Leviathan et
al., "Fast Inference from Transformers via Speculative Decoding" (arXiv:2211.17192):

* layout: request ``b`` owns draft tokens ``[cu[b-1], cu[b])`` of the flat ``[N]`` inputs
  (``cu = cu_num_draft_tokens`` is the *inclusive* cumulative sum, ``cu[-1] == N``);
* greedy rows: position ``j`` emits ``target_argmax``; the first position whose draft differs
  from it stops the row;
* random rows: draft ``d`` at token ``t`` is accepted when ``d >= 0``, ``q(d) > 0`` and
  ``p(d) / q(d) >= u[t]`` (``q(d) = 1`` without draft probabilities, e.g. n-gram drafts); the
  first rejected position emits the recovered token instead and stops the row;
* recovered token: argmax over the vocabulary of ``max(p - q, 0) * inv_q[b]`` (``p`` with the
  draft's entry zeroed when there are no draft probabilities), i.e. a sample of
  ``normalize(max(p - q, 0))`` by the exponential race with ``inv_q = 1 / Exp(1)`` noise shared
  by the positions of a request; ties go to the lowest token id;
* a row whose drafts are all accepted appends the bonus token after them;
* every other cell is ``PLACEHOLDER_TOKEN_ID`` (-1).

Written for readability (a loop per request and position, the algorithm as the paper states it)
and computed in float64. Probabilities are first taken to float32 (exact for bfloat16/float16),
and the quantities vLLM's kernels hold in float32 -- ``p(d) / q(d)``, ``max(p - q, 0)`` and the
score when the noise is float32 -- are rounded to float32 after the float64 operation. That
double rounding equals the float32 operation for ``+ - * /`` (float64 carries more than
2 * 24 + 2 bits; S. Figueroa, "When is double rounding innocuous?", SIGNUM 1995), so the reference
decides every comparison exactly as a float32 kernel does and the backends agree token for token.
"""

from __future__ import annotations

import torch

PLACEHOLDER_TOKEN_ID = -1


def _f32(x: float) -> float:
    """Round a float64 value to float32 (nearest even; overflow to inf)."""
    return float(torch.tensor(x, dtype=torch.float64).to(torch.float32))


def _spans(cu_num_draft_tokens: torch.Tensor) -> list[tuple[int, int]]:
    ends = [int(e) for e in cu_num_draft_tokens.tolist()]
    return list(zip([0, *ends[:-1]], ends, strict=True))


def _probs64(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.float32).to(torch.float64)


def sample_recovered_tokens(draft_token_ids: torch.Tensor, cu_num_draft_tokens: torch.Tensor,
                            draft_probs: torch.Tensor | None, target_probs: torch.Tensor,
                            inv_q: torch.Tensor) -> torch.Tensor:
    """Recovered token per draft position: ``[N]`` in ``draft_token_ids.dtype`` (see module)."""
    p_all = _probs64(target_probs)
    q_all = None if draft_probs is None else _probs64(draft_probs)
    noise_f32 = inv_q.dtype == torch.float32
    out = torch.empty_like(draft_token_ids)
    for b, (start, end) in enumerate(_spans(cu_num_draft_tokens)):
        noise = inv_q[b].to(torch.float64)
        for t in range(start, end):
            if q_all is None:
                residual = p_all[t].clone()
                d = int(draft_token_ids[t])
                if 0 <= d < residual.shape[0]:
                    residual[d] = 0.0
            else:
                residual = (p_all[t] - q_all[t]).clamp_min(0.0).float().double()
            score = residual * noise
            if noise_f32:
                score = score.float().double()
            best, best_id = -float("inf"), 0
            for v, s in enumerate(score.tolist()):
                if s > best:
                    best, best_id = s, v
            out[t] = best_id
    return out


def rejection_sample(draft_token_ids: torch.Tensor, cu_num_draft_tokens: torch.Tensor,
                     target_argmax: torch.Tensor | None, target_probs: torch.Tensor | None,
                     draft_probs: torch.Tensor | None, bonus_token_ids: torch.Tensor,
                     recovered_token_ids: torch.Tensor | None,
                     uniform_probs: torch.Tensor | None, is_greedy: torch.Tensor | None,
                     max_spec_len: int) -> torch.Tensor:
    """Output tokens ``[B, max_spec_len + 1]`` int32 (see module and ``ascend_ops.rejection_sample``)."""
    spans = _spans(cu_num_draft_tokens)
    out = torch.full((len(spans), max_spec_len + 1), PLACEHOLDER_TOKEN_ID, dtype=torch.int32)
    bonus = bonus_token_ids.reshape(-1).tolist()
    for b, (start, end) in enumerate(spans):
        greedy = True if is_greedy is None else bool(is_greedy[b])
        if greedy and target_argmax is None:
            continue  # the caller declared no greedy rows (vLLM's all_random): left as padding
        rejected = False
        for j, t in enumerate(range(start, end)):
            d = int(draft_token_ids[t])
            if greedy:
                assert target_argmax is not None  # skipped above when absent
                token = int(target_argmax[t])
                rejected = d != token
            else:  # random rows: _checks.rejection requires these three
                assert target_probs is not None and uniform_probs is not None
                assert recovered_token_ids is not None
                accepted = False
                if d >= 0:
                    q_d = 1.0 if draft_probs is None else _f32(float(draft_probs[t, d]))
                    p_d = _f32(float(target_probs[t, d]))
                    accepted = q_d > 0 and _f32(p_d / q_d) >= float(uniform_probs[t])
                token = d if accepted else int(recovered_token_ids[t])
                rejected = not accepted
            out[b, j] = token
            if rejected:
                break
        if not rejected:
            out[b, end - start] = int(bonus[b])
    return out
