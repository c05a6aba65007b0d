# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Greedy-parity judgement between a vLLM continuation and the HF oracle.

Rule: a continuation passes when it is token-identical to the oracle's, or when at the first
divergence each side's token is in the other side's top-5 and both logprob gaps are below 1e-3
(a near tie that float32 rounding may flip). A batch passes when at least ``min_identical`` are
identical and every other one is such a near tie.
"""

from __future__ import annotations

from dataclasses import dataclass

from hf_oracle import OracleRun

TOP_K = 5
MAX_GAP = 1e-3
# One line per judged batch, printed in pytest's terminal summary (conftest.py).
SUMMARY: list[str] = []


@dataclass
class Verdict:
    identical: bool
    near_tie: bool  # only meaningful when not identical
    divergence: int | None
    detail: str

    @property
    def ok(self) -> bool:
        return self.identical or self.near_tie


def vllm_step_logprobs(completion) -> list[dict[int, tuple[float, int | None]]]:
    """``CompletionOutput.logprobs`` as ``[{token_id: (logprob, rank)}]`` per generated step."""
    steps = []
    for entry in completion.logprobs or []:
        steps.append({int(t): (float(lp.logprob), lp.rank) for t, lp in entry.items()})
    return steps


def judge(vllm_tokens: list[int], vllm_logprobs: list[dict[int, tuple[float, int | None]]],
          oracle: OracleRun, top_k: int = TOP_K, max_gap: float = MAX_GAP) -> Verdict:
    """Compare one vLLM continuation (token ids + per-step top logprobs) with the oracle."""
    hf = oracle.tokens
    if list(vllm_tokens) == list(hf):
        return Verdict(True, False, None, "identical")
    n = min(len(vllm_tokens), len(hf))
    i = next((j for j in range(n) if vllm_tokens[j] != hf[j]), n)
    if i == n:
        return Verdict(False, False, i, f"length differs: vllm {len(vllm_tokens)} vs hf {len(hf)}")
    v, h = int(vllm_tokens[i]), int(hf[i])
    hf_top = oracle.top(i, top_k)
    hf_lp = oracle.logprobs[i]
    gap_hf = float(hf_lp[h] - hf_lp[v])
    steps = vllm_logprobs[i] if i < len(vllm_logprobs) else {}
    vllm_top = [t for t, (_, rank) in sorted(steps.items(), key=lambda kv: -kv[1][0])
                if rank is None or rank <= top_k][:top_k]
    gap_vllm = steps[v][0] - steps[h][0] if (v in steps and h in steps) else float("inf")
    near = v in hf_top and h in vllm_top and gap_hf < max_gap and gap_vllm < max_gap
    detail = (f"first divergence at step {i}: vllm token {v}, hf token {h}; "
              f"hf top{top_k} {hf_top} (gap {gap_hf:.3g}); vllm top{top_k} {vllm_top} "
              f"(gap {gap_vllm:.3g}); common prefix {list(hf[:i])}")
    return Verdict(False, near, i, detail)


def assert_batch_parity(verdicts: list[Verdict], min_identical: int, label: str) -> None:
    """Fail with every verdict's detail unless the batch rule holds; record a summary line."""
    identical = sum(v.identical for v in verdicts)
    near = sum(v.near_tie for v in verdicts if not v.identical)
    SUMMARY.append(f"{label}: {identical}/{len(verdicts)} token-identical, {near} near ties, "
                   f"{len(verdicts) - identical - near} failing")
    report = "\n".join(f"  prompt {k}: {v.detail}" for k, v in enumerate(verdicts))
    assert identical >= min_identical and all(v.ok for v in verdicts), (
        f"{identical}/{len(verdicts)} token-identical (need >= {min_identical}, others near "
        f"ties with gap < {MAX_GAP}):\n{report}")
