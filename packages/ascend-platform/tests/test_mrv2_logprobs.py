# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The MRv2 ``logprob_token_ids`` stand-ins (vllm_ascend_platform.host.mrv2_logprobs).

References: a row-by-row transcription of vLLM 0.34's ``_fill_logprob_token_ids_kernel``
(``vllm/v1/worker/gpu/sample/logprob.py``; the Triton kernel cannot run here), and the full
log-softmax of each row gathered at the requested ids, which is what vLLM 0.33's V1 sampler
returned (``Sampler.gather_specific_token_logprobs``, ``vllm/v1/sample/sampler.py``).
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
import torch
from test_mrv2_kernels import _no_host_reads
from vllm_ascend_platform.host import mrv2_logprobs as lp

MAX_IDS = 128  # vllm.sampling_params.MAX_LOGPROB_TOKEN_IDS


def _kernel_reference(out, mask, sampled, topk, idx, num_ids, ids, num_topk):
    """One program per batch row, as the Triton kernel."""
    for b in range(out.shape[0]):
        out[b, 0] = sampled[b]
        mask[b, 0] = True
        slot = int(idx[b])
        n = int(num_ids[slot])
        src, count = (ids[slot], n) if n > 0 else (topk[b] if num_topk else None, num_topk)
        for c in range(count):
            out[b, 1 + c] = int(src[c])
            mask[b, 1 + c] = True


def _case(rng: random.Random, vocab: int = 97):
    batch = rng.randint(1, 7)
    slots = 8
    num_topk = rng.choice([0, 1, 3, 5])
    num_ids = torch.zeros(slots, dtype=torch.int32)
    ids = torch.zeros(slots, MAX_IDS, dtype=torch.int32)
    for s in range(slots):
        if rng.random() < 0.5:
            n = rng.randint(1, 9)
            num_ids[s] = n
            ids[s, :n] = torch.tensor([rng.randrange(vocab) for _ in range(n)], dtype=torch.int32)
    idx = torch.tensor([rng.randrange(slots) for _ in range(batch)], dtype=torch.int32)
    logits = torch.randn(batch, vocab)
    sampled = torch.randint(0, vocab, (batch,))
    return logits, sampled, idx, num_ids, ids, num_topk


def _state(num_ids, ids):
    return SimpleNamespace(num_token_ids=SimpleNamespace(gpu=num_ids),
                           token_ids=SimpleNamespace(gpu=ids))


@pytest.mark.parametrize("seed", range(12))
def test_fill_matches_the_kernel_row_by_row(seed):
    logits, sampled, idx, num_ids, ids, num_topk = _case(random.Random(seed))
    num_cols = max(num_topk, int(num_ids[idx.long()].max()))
    topk = torch.topk(logits, num_topk, dim=-1).indices.to(torch.int32) if num_topk else ids
    got = sampled.new_zeros((logits.shape[0], 1 + num_cols))
    got_mask = torch.zeros_like(got, dtype=torch.bool)
    want, want_mask = got.clone(), got_mask.clone()
    lp.fill_logprob_token_ids(got, got_mask, sampled, topk, idx, num_ids, ids, num_topk)
    _kernel_reference(want, want_mask, sampled, topk, idx, num_ids, ids, num_topk)
    assert torch.equal(got, want) and torch.equal(got_mask, want_mask)


def test_kernel_level_launch_fills_only_the_grid_rows():
    logits, sampled, idx, num_ids, ids, _ = _case(random.Random(5))
    num_ids[idx.long()] = 2
    out = torch.full((logits.shape[0] + 2, 3), -7, dtype=torch.int64)
    mask = torch.zeros_like(out, dtype=torch.bool)
    launch = lp.KERNELS["vllm.v1.worker.gpu.sample.logprob._fill_logprob_token_ids_kernel"]
    b = logits.shape[0]
    launch[(b,)](out, out.stride(0), mask, mask.stride(0), sampled, ids, ids.stride(0), idx,
                 num_ids, ids, ids.stride(0), NUM_TOPK=0, PADDED_COLS=2)
    assert out[:b, 0].tolist() == sampled.tolist()
    assert out[:b, 1:].tolist() == ids[idx.long(), :2].tolist()
    assert mask[:b].all() and not mask[b:].any() and (out[b:] == -7).all()


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("logits_mode", [False, True])
def test_scores_are_the_full_distribution_at_the_requested_ids(seed, logits_mode):
    logits, sampled, idx, num_ids, ids, num_topk = _case(random.Random(100 + seed))
    num_ids[idx[0].long()] = 3  # at least one request of the batch asks for its own ids
    ids[idx[0].long(), :3] = torch.tensor([4, 0, 96], dtype=torch.int32)
    max_ids = int(num_ids[idx.long()].max())
    res = lp.compute_topk_scores(logits, num_topk, sampled, [0, logits.shape[0]],
                                 logprob_token_ids_state=_state(num_ids, ids),
                                 expanded_idx_mapping=idx, max_per_req_token_ids=max_ids,
                                 logits_mode=logits_mode)
    full = logits if logits_mode else torch.log_softmax(logits, dim=-1)
    assert res.logprob_token_ids.shape == (logits.shape[0], 1 + max(num_topk, max_ids))
    assert res.cu_num_generated_tokens == [0, logits.shape[0]]
    for b in range(logits.shape[0]):
        n = int(num_ids[idx[b].long()])
        want_ids = [int(sampled[b])] + (ids[idx[b].long(), :n].tolist() if n else
                                        torch.topk(logits[b], num_topk).indices.tolist())
        width = len(want_ids)
        assert res.logprob_token_ids[b, :width].tolist() == want_ids
        torch.testing.assert_close(res.logprobs[b, :width], full[b, want_ids],
                                   rtol=0, atol=1e-5)
        assert torch.isneginf(res.logprobs[b, width:]).all()  # padding columns
        assert res.selected_token_ranks[b] == int((logits[b] >= logits[b, sampled[b]]).sum())


def test_without_requested_ids_the_result_is_sampled_then_top_k():
    logits = torch.randn(3, 50)
    sampled = torch.tensor([1, 2, 3])
    res = lp.compute_topk_scores(logits, 4, sampled)
    assert res.logprob_token_ids[:, 0].tolist() == [1, 2, 3]
    assert torch.equal(res.logprob_token_ids[:, 1:], torch.topk(logits, 4).indices)
    torch.testing.assert_close(res.logprobs, torch.log_softmax(logits, -1).gather(
        -1, res.logprob_token_ids), rtol=0, atol=1e-5)
    assert res.cu_num_generated_tokens is None and res.cu_num_generated_tokens_tensor is None
    cu = torch.tensor([0, 3])
    assert lp.compute_topk_scores(logits, 0, sampled, cu).cu_num_generated_tokens_tensor is cu


def test_requested_ids_path_reads_nothing_back_to_the_host(monkeypatch):
    logits, sampled, idx, num_ids, ids, _ = _case(random.Random(9))
    num_ids[idx[0].long()] = 4
    state = _state(num_ids, ids)
    with _no_host_reads(monkeypatch) as seen:
        lp.compute_topk_scores(logits, 2, sampled, [0, logits.shape[0]],
                               logprob_token_ids_state=state, expanded_idx_mapping=idx,
                               max_per_req_token_ids=4)
    assert seen.syncs == []


def test_registered_with_the_other_mrv2_stand_ins():
    from vllm_ascend_platform.host import mrv2_kernels, mrv2_spec_decode

    assert "vllm.v1.worker.gpu.sample.logprob._fill_logprob_token_ids_kernel" not in \
        mrv2_kernels.KERNELS  # no longer the NotImplementedError placeholder
    assert mrv2_spec_decode.LOGPROB_KERNELS is lp.KERNELS
    assert set(lp.KERNELS) == {"vllm.v1.worker.gpu.sample.logprob.compute_topk_scores",
                               "vllm.v1.worker.gpu.sample.logprob._fill_logprob_token_ids_kernel"}
