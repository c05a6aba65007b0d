# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Speculative-decoding verification ops on the CPU backends: property tests against an
independent oracle of vLLM 0.32's rejection-sampler rule (tests/spec_samples.py), the documented
bonus / first-rejection structure, and bad input."""

from __future__ import annotations

import ascend_ops
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from spec_samples import make_problem, oracle

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _run(pb):
    rec = ascend_ops.sample_recovered_tokens(*pb.recovered_args())
    out = ascend_ops.rejection_sample(*pb.rejection_args(rec))
    return rec, out


def _backends():
    # the NPU branch is aten ops only (no torch_npu operator), so forcing it runs it on CPU
    # tensors too; test_simulator_spec_decode.py runs it over the simulated NPU
    names = ["reference", "npu"]
    if ascend_ops.native_available():
        names.append("native")
    return names


@given(
    k=st.integers(1, 5),
    counts_seed=st.lists(st.integers(0, 5), min_size=2, max_size=6),
    vocab=st.sampled_from([2, 3, 17, 64]),
    dtype=st.sampled_from(DTYPES),
    draft_probs=st.booleans(),
    greedy=st.sampled_from(["all", "mixed", "none"]),
    scenario=st.sampled_from(["random", "accept", "reject_first"]),
    noise64=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_backends_match_the_documented_rule(k, counts_seed, vocab, dtype, draft_probs, greedy,
                                            scenario, noise64, seed):
    counts = [min(c, k) for c in counts_seed]
    if sum(counts) == 0:
        counts[0] = k
    pb = make_problem(counts, vocab, dtype, draft_probs=draft_probs, greedy=greedy,
                      scenario=scenario, seed=seed,
                      noise_dtype=torch.float64 if noise64 else torch.float32)
    want_rec, want_out = oracle(pb)
    for name in _backends():
        with ascend_ops.use_backend(name):
            rec, out = _run(pb)
        assert rec.dtype == pb.draft.dtype and out.dtype == torch.int32, name
        assert torch.equal(rec.long(), want_rec), (name, rec, want_rec)
        assert torch.equal(out, want_out), (name, out, want_out)
    # the documented structure, checked on the output itself
    for b, n in enumerate(counts):
        row = want_out[b]
        greedy_row = pb.is_greedy is None or bool(pb.is_greedy[b])
        if greedy_row and pb.target_argmax is None:
            assert bool((row == -1).all())
            continue
        drafts = pb.draft[pb.cu[b] - n: pb.cu[b]].tolist()
        if scenario == "accept":
            assert row.tolist() == drafts + [int(pb.bonus[b, 0])] + [-1] * (pb.max_spec_len - n)
        elif scenario == "reject_first" and n:
            t = int(pb.cu[b]) - n
            first = int(pb.target_argmax[t]) if greedy_row else int(want_rec[t])
            assert row.tolist() == [first] + [-1] * pb.max_spec_len
        used = int((row != -1).sum())
        assert 1 <= used <= n + 1 and bool((row[used:] == -1).all())


@pytest.mark.parametrize("draft_probs", [True, False], ids=["draft_probs", "ngram"])
def test_mixed_batches_sweep(draft_probs):
    # a fixed sweep next to the property test: mixed greedy/random rows, mixed draft counts
    for seed in range(12):
        pb = make_problem([3, 2, 4, 1, 0, 5], 23, DTYPES[seed % 3], draft_probs=draft_probs,
                          seed=seed)
        want_rec, want_out = oracle(pb)
        for name in _backends():
            with ascend_ops.use_backend(name):
                rec, out = _run(pb)
            assert torch.equal(rec.long(), want_rec), (name, seed)
            assert torch.equal(out, want_out), (name, seed, out, want_out)


@pytest.mark.parametrize("name", ["reference", "native"])
def test_no_drafts_and_padded_drafts(name):
    if name == "native" and not ascend_ops.native_available():
        pytest.skip("ascend_ops._C not built")
    pb = make_problem([0, 2, 0], 8, greedy="none", scenario="accept", seed=3, max_spec_len=3)
    pb.draft[1] = -1  # a padded draft is rejected even with u = 0
    with ascend_ops.use_backend(name):
        rec, out = _run(pb)
    assert out[0].tolist() == [int(pb.bonus[0, 0]), -1, -1, -1]
    assert out[1].tolist() == [int(pb.draft[0]), int(rec[1]), -1, -1]
    assert out[2].tolist() == [int(pb.bonus[2, 0]), -1, -1, -1]


@pytest.mark.parametrize("greedy", ["all", "mixed"])
def test_a_step_with_no_draft_tokens_emits_every_bonus_token(greedy):
    # N == 0 (no request found a draft, e.g. n-gram without a match): vLLM's kernels still write
    # each row's bonus token at position 0 (rejection_sampler.py: every draft "accepted").
    pb = make_problem([0, 0, 0], 8, greedy=greedy, scenario="accept", seed=5, max_spec_len=0)
    want = [[int(pb.bonus[b, 0])] for b in range(3)]
    for name in _backends():
        with ascend_ops.use_backend(name):
            _, out = _run(pb)
        assert out.tolist() == want, name


def test_ngram_recovered_never_repeats_the_rejected_draft():
    # q one-hot at the draft: normalize(max(p - q, 0)) has no mass on the draft token
    pb = make_problem([5, 5], 4, draft_probs=False, seed=11)
    for name in _backends():
        with ascend_ops.use_backend(name):
            rec = ascend_ops.sample_recovered_tokens(*pb.recovered_args())
        assert (rec != pb.draft).all(), name


def _bad(**over):
    pb = make_problem([2, 1], 6, seed=1)
    args = dict(draft_token_ids=pb.draft, cu_num_draft_tokens=pb.cu,
                target_argmax=pb.target_argmax, target_probs=pb.target_probs,
                draft_probs=pb.draft_probs, bonus_token_ids=pb.bonus,
                recovered_token_ids=pb.draft.clone(), uniform_probs=pb.uniform,
                is_greedy=pb.is_greedy, max_spec_len=2)
    args.update(over)
    return args


@pytest.mark.parametrize("over,exc,match", [
    (dict(draft_token_ids=torch.zeros(3)), TypeError, "draft_token_ids must be int32 or int64"),
    (dict(target_probs=torch.rand(3, 6, dtype=torch.float64)), TypeError, "target_probs must be float32"),
    (dict(draft_probs=torch.rand(3, 5)), ValueError, r"draft_probs must be \[3, 6\]"),
    (dict(bonus_token_ids=torch.zeros(3, dtype=torch.long)), ValueError, "bonus_token_ids must be"),
    (dict(is_greedy=None, target_argmax=None), ValueError, "target_argmax is required"),
    (dict(uniform_probs=None), ValueError, "uniform_probs required when is_greedy is given"),
    (dict(is_greedy=torch.zeros(2, dtype=torch.int32)), ValueError, "is_greedy must be a bool"),
    (dict(max_spec_len=1), ValueError, "more than max_spec_len=1"),
    (dict(cu_num_draft_tokens=torch.tensor([2, 4], dtype=torch.int32)), ValueError,
     "inclusive cumulative draft counts"),
    (dict(draft_token_ids=torch.tensor([0, 6, 1], dtype=torch.int32)), ValueError,
     r"draft_token_ids must lie in \[-1, vocab_size=6\)"),
])
@pytest.mark.parametrize("name", ["reference", "native"])
def test_bad_input_names_the_argument(over, exc, match, name):
    if name == "native" and not ascend_ops.native_available():
        pytest.skip("ascend_ops._C not built")
    with ascend_ops.use_backend(name), pytest.raises(exc, match=match):
        ascend_ops.rejection_sample(**_bad(**over))


def test_recovered_bad_noise_shape():
    pb = make_problem([2, 1], 6, seed=1)
    with pytest.raises(ValueError, match=r"inv_q must be \[batch_size=2, vocab_size=6\]"):
        ascend_ops.sample_recovered_tokens(pb.draft, pb.cu, None, pb.target_probs,
                                           pb.inv_q[:, :5])


def test_registered_and_traceable_with_fake_tensors():
    from torch._subclasses.fake_tensor import FakeTensorMode

    pb = make_problem([3, 2], 10, seed=2)
    with FakeTensorMode(allow_non_fake_inputs=True):
        rec = torch.ops.ascend.sample_recovered_tokens(*pb.recovered_args())
        out = torch.ops.ascend.rejection_sample(*pb.rejection_args(rec))
    assert tuple(rec.shape) == (5,) and tuple(out.shape) == (2, 4) and out.dtype == torch.int32


@pytest.mark.parametrize("name", ["reference", "native"])
def test_acceptance_ratio_is_rounded_to_float32_like_vllms_kernel(name):
    # vLLM's random kernel computes target_prob / draft_prob in float32 and compares it with a
    # float64 uniform: a u strictly between the float32 and the float64 quotient tells them apart
    if name == "native" and not ascend_ops.native_available():
        pytest.skip("ascend_ops._C not built")
    p, q = torch.tensor(0.3), torch.tensor(0.7)                    # float32
    r32, r64 = float(p / q), float(p) / float(q)
    assert r32 != r64
    u = (r32 + r64) / 2
    want_accept = r32 >= u
    pb = make_problem([1], 4, greedy="none", seed=5)
    d = int(pb.draft[0])
    pb.target_probs[0, d], pb.draft_probs[0, d] = float(p), float(q)
    pb.uniform[0] = u
    with ascend_ops.use_backend(name):
        _, out = _run(pb)
    assert (int(out[0, 0]) == d) == want_accept
    assert oracle(pb)[1][0, 0] == out[0, 0]
