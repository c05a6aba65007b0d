# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Rejection sampling keeps the target distribution (Leviathan et al., arXiv:2211.17192,
Theorem 1): the token emitted at a draft position -- the accepted draft or the recovered token --
is distributed as the target ``p``, whatever the draft distribution ``q``. Chi-square goodness of
fit over 4000 independent requests in one batched call, p-value > 0.001."""

from __future__ import annotations

import math

import ascend_ops
import pytest
import torch

DRAWS = 4000
P = torch.tensor([0.05, 0.4, 0.1, 0.3, 0.15])   # target
Q = torch.tensor([0.5, 0.1, 0.2, 0.05, 0.15])   # draft, far from the target


def _chi_square_pvalue(observed: torch.Tensor, probs: torch.Tensor) -> float:
    """Pearson chi-square p-value for 5 categories (4 degrees of freedom). For an even df = 2m the
    chi-square survival function is exp(-x/2) * sum_{i<m} (x/2)^i / i!, here exp(-x/2)(1 + x/2)
    (the standalone test environment of ascend-ops has no scipy)."""
    assert observed.numel() == 5
    expected = probs.double() / probs.double().sum() * observed.sum()
    x = float(((observed - expected) ** 2 / expected).sum())
    return math.exp(-x / 2) * (1 + x / 2)


def _first_tokens(with_draft_probs: bool, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    vocab = P.shape[0]
    counts = torch.ones(DRAWS, dtype=torch.int32)
    cu = counts.cumsum(0).to(torch.int32)
    if with_draft_probs:
        draft = torch.multinomial(Q, DRAWS, replacement=True, generator=g).to(torch.int32)
        draft_probs = Q.expand(DRAWS, vocab).contiguous()
    else:  # n-gram: a fixed proposal, q one-hot at it
        draft = torch.full((DRAWS,), 3, dtype=torch.int32)
        draft_probs = None
    target = P.expand(DRAWS, vocab).contiguous()
    inv_q = torch.empty(DRAWS, vocab).exponential_(generator=g).reciprocal()
    uniform = torch.rand(DRAWS, dtype=torch.float64, generator=g)
    rec = ascend_ops.sample_recovered_tokens(draft, cu, draft_probs, target, inv_q)
    out = ascend_ops.rejection_sample(
        draft, cu, None, target, draft_probs, torch.zeros(DRAWS, dtype=torch.long), rec, uniform,
        torch.zeros(DRAWS, dtype=torch.bool), 1)
    return out[:, 0].long()


@pytest.mark.parametrize("with_draft_probs", [True, False], ids=["draft_probs", "ngram"])
def test_emitted_token_follows_the_target_distribution(with_draft_probs):
    tokens = _first_tokens(with_draft_probs, seed=1234)
    observed = torch.bincount(tokens, minlength=P.shape[0]).double()
    assert observed.sum() == DRAWS
    assert _chi_square_pvalue(observed, P) > 1e-3
    # and the test has power: the draft distribution itself is rejected
    assert _chi_square_pvalue(observed, Q) < 1e-6


def test_chi_square_helper_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    observed = torch.tensor([210.0, 1580.0, 420.0, 1190.0, 600.0])
    want = stats.chisquare(observed.numpy(), (P.double() / P.double().sum() * 4000).numpy())
    assert math.isclose(_chi_square_pvalue(observed, P), want.pvalue, rel_tol=1e-9)
