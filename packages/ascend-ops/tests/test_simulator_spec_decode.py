# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Speculative-decoding verification ops on the NPU branch over the simulated torch_npu
(docs/simulated-npu.md): token-for-token agreement with the reference, no host sync, and an NPU
graph capture replayed on new drafts/noise (no data-dependent shapes)."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from ascend_ops import simulator
from ascend_ops.reference import spec_decode as ref
from spec_samples import make_problem


def _both(pb):
    rec = ascend_ops.sample_recovered_tokens(*pb.recovered_args())
    return rec, ascend_ops.rejection_sample(*pb.rejection_args(rec))


@pytest.mark.sim_only
@pytest.mark.parametrize("case", [
    dict(counts=[3, 0, 5, 1], vocab=33, dtype=torch.bfloat16, greedy="mixed", scenario="random"),
    dict(counts=[2, 2], vocab=17, dtype=torch.float16, greedy="none", scenario="accept",
         draft_probs=False),
    dict(counts=[4, 1, 2], vocab=9, dtype=torch.float32, greedy="all", scenario="reject_first"),
    dict(counts=[1, 5, 3], vocab=64, dtype=torch.float32, greedy="mixed", scenario="random",
         noise_dtype=torch.float64),
    dict(counts=[0, 0], vocab=5, dtype=torch.float32, greedy="mixed", scenario="random",
         max_spec_len=2),
])
def test_npu_branch_matches_reference_without_host_syncs(simulated_npu, case):
    counts = case.pop("counts")
    pb = make_problem(counts, case.pop("vocab"), case.pop("dtype"), seed=7, **case)
    want_rec = ref.sample_recovered_tokens(*pb.recovered_args())
    want_out = ref.rejection_sample(*pb.rejection_args(want_rec))
    ascend_ops.reset_call_counts()
    with simulator.tracking():
        rec, out = _both(pb)
    assert simulator.ledger().host_syncs == 0, simulator.ledger().host_sync_sites
    assert set(ascend_ops.call_counts(per_backend=True)) == {
        ("sample_recovered_tokens", "npu"), ("rejection_sample", "npu")}
    assert torch.equal(rec, want_rec) and torch.equal(out, want_out)


def test_npu_branch_replays_in_a_graph(simulated_npu):
    pb = make_problem([3, 1, 2], 12, seed=1)
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        rec, out = _both(pb)
    for seed in (2, 3):  # new drafts, probabilities, noise and greedy rows, same shapes
        new = make_problem([3, 1, 2], 12, seed=seed)
        for name in ("draft", "target_probs", "draft_probs", "target_argmax", "bonus", "uniform",
                     "inv_q", "is_greedy"):
            getattr(pb, name).copy_(getattr(new, name))
        g.replay()
        want_rec = ref.sample_recovered_tokens(*new.recovered_args())
        assert torch.equal(rec, want_rec)
        assert torch.equal(out, ref.rejection_sample(*new.rejection_args(want_rec)))
