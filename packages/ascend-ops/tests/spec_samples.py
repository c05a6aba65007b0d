# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Speculative-decoding verification problems and an independent oracle of vLLM 0.32's rule.

The oracle (``oracle``) is written from the documented rule in ``vllm/v1/sample/
rejection_sampler.py`` with float32 tensor arithmetic (the kernels' precision) and plain Python
scans, independently of ``ascend_ops.reference.spec_decode`` (which computes in float64 and
rounds). No numpy: the ascend-ops standalone test environment has torch alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

PLACEHOLDER = -1


@dataclass
class Problem:
    draft: torch.Tensor          # [N] int32
    cu: torch.Tensor             # [B] int32
    counts: list[int]
    target_probs: torch.Tensor   # [N, V]
    draft_probs: torch.Tensor | None
    target_argmax: torch.Tensor | None
    bonus: torch.Tensor          # [B, 1] int64
    uniform: torch.Tensor        # [N] float64
    inv_q: torch.Tensor          # [B, V] float32 / float64
    is_greedy: torch.Tensor | None
    max_spec_len: int

    def recovered_args(self):
        return self.draft, self.cu, self.draft_probs, self.target_probs, self.inv_q

    def rejection_args(self, recovered):
        random_rows = self.is_greedy is not None
        return (self.draft, self.cu, self.target_argmax,
                self.target_probs if random_rows else None, self.draft_probs, self.bonus,
                recovered if random_rows else None, self.uniform if random_rows else None,
                self.is_greedy, self.max_spec_len)


def make_problem(counts, vocab, dtype=torch.float32, *, draft_probs=True, greedy="mixed",
                 scenario="random", seed=0, noise_dtype=torch.float32, max_spec_len=None):
    """``greedy``: "all" (is_greedy None), "mixed" or "none" (target_argmax None).
    ``scenario``: "random", "accept" (every draft accepted) or "reject_first"."""
    g = torch.Generator().manual_seed(seed)
    batch, n = len(counts), sum(counts)
    cu = torch.tensor(counts, dtype=torch.int64).cumsum(0).to(torch.int32)
    tp = torch.softmax(torch.randn(n, vocab, generator=g) * 1.5, -1)
    dp = torch.softmax(torch.randn(n, vocab, generator=g) * 1.5, -1)
    draft = torch.multinomial(dp, 1, generator=g).view(-1) if n else torch.zeros(0, dtype=torch.long)
    if greedy == "all":
        is_greedy = None
    elif greedy == "none":
        is_greedy = torch.zeros(batch, dtype=torch.bool)
    else:  # alternate greedy and random rows (both kinds present once batch >= 2)
        is_greedy = torch.arange(batch) % 2 == seed % 2
    uniform = torch.rand(n, dtype=torch.float64, generator=g)
    argmax = tp.argmax(-1)
    row_greedy = (torch.ones(batch, dtype=torch.bool) if is_greedy is None else is_greedy)
    tok_greedy = row_greedy.repeat_interleave(torch.tensor(counts, dtype=torch.long),
                                              output_size=n)
    if scenario == "accept":
        argmax = torch.where(tok_greedy, draft, argmax)
        uniform.zero_()
    elif scenario == "reject_first":
        firsts = (cu.long() - torch.tensor(counts))[torch.tensor(counts) > 0]
        argmax[firsts] = (draft[firsts] + 1) % vocab
        tp[firsts, draft[firsts]] = 0.0  # ratio 0 < u
        uniform[firsts] = 0.5 + 0.5 * uniform[firsts]
    tp, dp = tp.to(dtype), dp.to(dtype)
    noise = torch.empty(batch, vocab, dtype=noise_dtype).exponential_(generator=g).reciprocal()
    return Problem(
        draft=draft.to(torch.int32), cu=cu, counts=list(counts), target_probs=tp,
        draft_probs=dp if draft_probs else None,
        target_argmax=None if greedy == "none" else argmax, is_greedy=is_greedy,
        bonus=torch.randint(0, vocab, (batch, 1), generator=g), uniform=uniform,
        inv_q=noise, max_spec_len=max(counts) if max_spec_len is None else max_spec_len)


def _first_argmax(values: list[float]) -> int:
    best, best_id = values[0], 0
    for i, v in enumerate(values):
        if v > best:
            best, best_id = v, i
    return best_id


def oracle(pb: Problem) -> tuple[torch.Tensor, torch.Tensor]:
    """(recovered [N] int64, output [B, S+1] int32) by the documented rule."""
    p = pb.target_probs.float()
    q = None if pb.draft_probs is None else pb.draft_probs.float()
    draft = pb.draft.tolist()
    ends = torch.tensor(pb.counts).cumsum(0).tolist()
    starts = [e - c for e, c in zip(ends, pb.counts, strict=True)]
    rec = torch.zeros(len(draft), dtype=torch.int64)
    for b, (s, e) in enumerate(zip(starts, ends, strict=True)):
        for t in range(s, e):
            if q is None:
                res = p[t].clone()
                if draft[t] >= 0:
                    res[draft[t]] = 0.0
            else:
                res = torch.maximum(p[t] - q[t], torch.zeros(()))          # float32
            score = res * pb.inv_q[b] if pb.inv_q.dtype == torch.float32 else \
                res.double() * pb.inv_q[b]
            rec[t] = _first_argmax(score.tolist())
    out = torch.full((len(pb.counts), pb.max_spec_len + 1), PLACEHOLDER, dtype=torch.int32)
    for b, (s, e) in enumerate(zip(starts, ends, strict=True)):
        greedy = pb.is_greedy is None or bool(pb.is_greedy[b])
        if greedy and pb.target_argmax is None:
            continue
        j = 0
        while j < e - s:
            t, d = s + j, draft[s + j]
            if greedy:
                ok, alt = d == int(pb.target_argmax[t]), int(pb.target_argmax[t])
            else:
                ok = False
                if d >= 0:
                    qd = torch.ones((), dtype=torch.float32) if q is None else q[t, d]
                    ratio = p[t, d] / qd                                        # float32
                    ok = bool(qd > 0) and float(ratio) >= float(pb.uniform[t])
                alt = int(rec[t])
            if not ok:
                out[b, j] = alt
                break
            out[b, j] = d
            j += 1
        else:
            out[b, e - s] = int(pb.bonus[b, 0])
    return rec, out
