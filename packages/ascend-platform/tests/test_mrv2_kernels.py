# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The MRv2 host stand-ins (vllm_ascend_platform.host.mrv2_kernels) on hand-made batches.

The module imports only torch, so these run with vLLM 0.33 too. Expected values follow the
Triton kernels' contracts in vLLM 0.34 (vllm/v1/worker/gpu/input_batch.py, block_table.py,
buffer_utils.py, spec_decode/ngram/speculator.py, spec_decode/rejection_sampler_utils.py),
worked out by hand here, not by calling those kernels (no Triton backend on this machine).
"""

from __future__ import annotations

import pytest
import torch
from vllm_ascend_platform.host import mrv2_kernels as k
from vllm_ascend_platform.host import mrv2_spec_decode as sd


def test_prepare_pos_seq_lens_positions_follow_computed_tokens_and_pad_zeroes():
    idx = torch.tensor([2, 0])
    qsl = torch.tensor([0, 3, 4], dtype=torch.int32)
    done = torch.tensor([5, 0, 7], dtype=torch.int32)
    pos = torch.full((6,), -1, dtype=torch.int64)
    seq_lens = torch.full((4,), 9, dtype=torch.int32)
    k.prepare_pos_seq_lens(idx, qsl, done, pos, seq_lens)
    assert pos[:4].tolist() == [7, 8, 9, 5]
    assert seq_lens.tolist() == [10, 6, 0, 0]


def test_combine_writes_last_sampled_token_for_decodes_only():
    input_ids = torch.tensor([11, 12, 13, 0], dtype=torch.int32)
    idx = torch.tensor([0, 1])
    last = torch.tensor([77, 88])
    qsl = torch.tensor([0, 3, 4], dtype=torch.int32)
    seq_lens = torch.tensor([3, 9], dtype=torch.int32)
    prefill_len = torch.tensor([3, 5], dtype=torch.int32)  # req 0 prefilling, req 1 decoding
    drafts = torch.zeros(2, 0, dtype=torch.int64)
    cu = torch.tensor([0, 1, 2], dtype=torch.int32)
    logits_indices = k.combine_sampled_and_draft_tokens(
        input_ids, idx, last, qsl, seq_lens, prefill_len, drafts, cu, 2)
    assert logits_indices.tolist() == [2, 3]
    assert input_ids.tolist() == [11, 12, 13, 88]


def test_post_update_appends_tokens_and_advances_computed():
    idx = torch.tensor([1, -1])
    done = torch.tensor([0, 4], dtype=torch.int32)
    last = torch.zeros(2, dtype=torch.int64)
    sampled = torch.tensor([[5, 6], [9, 9]])
    num_sampled = torch.tensor([2, 1], dtype=torch.int32)
    num_rejected = torch.tensor([1, 0], dtype=torch.int32)
    qsl = torch.tensor([0, 3, 4], dtype=torch.int32)
    all_ids = torch.zeros(2, 10, dtype=torch.int32)
    total = torch.tensor([0, 6], dtype=torch.int32)
    counts = torch.zeros(2, 12, dtype=torch.int32)
    k.post_update(idx, done, last, counts, sampled, num_sampled, num_rejected, qsl, all_ids, total)
    assert all_ids[1, 6:8].tolist() == [5, 6] and total.tolist() == [0, 8]
    assert last.tolist() == [0, 6] and done.tolist() == [0, 6]  # 4 + (3 - 1)
    assert counts[1, 5] == 1 and counts[1, 6] == 1 and counts[0].sum() == 0  # row -1 skipped


def test_slot_mappings_through_registered_pointer_tables():
    table = torch.tensor([[3, 7, 0], [5, 0, 0]], dtype=torch.int32)
    k.register_pointers([table])
    ptrs = torch.tensor([table.data_ptr()], dtype=torch.int64).view(torch.uint64)
    out = torch.zeros(1, 8, dtype=torch.int64)
    launch = k.HostLaunch(k._compute_slot_mappings)
    launch[(1, 3)](8, torch.tensor([0, 1]), torch.tensor([0, 3, 4], dtype=torch.int32),
                   torch.tensor([3, 4, 5, 1]), ptrs, None, torch.tensor([4]),
                   torch.tensor([True]), None, out, out.stride(0), 0, PAD_ID=-1)
    # block size 4: req 0 positions 3,4,5 -> 3*4+3, 7*4+0, 7*4+1; req 1 position 1 -> 5*4+1
    assert out[0].tolist() == [15, 28, 29, 21, -1, -1, -1, -1]


def test_apply_write_addresses_rows_by_stride():
    out = torch.zeros(3, 4, dtype=torch.int32)
    launch = k.HostLaunch(k._apply_write)
    launch[(2, 1)](out, out.stride(0), torch.tensor([2, 0], dtype=torch.int32),
                   torch.tensor([1, 0], dtype=torch.int32), torch.tensor([7, 8, 9], dtype=torch.int32),
                   torch.tensor([2, 3], dtype=torch.int32), None, MULTI_GROUP=False)
    assert out.tolist() == [[9, 0, 0, 0], [0, 0, 0, 0], [0, 7, 8, 0]]


def test_ranks_are_one_based_counting_ties_and_the_token_itself():
    # vllm/v1/worker/gpu/sample/logprob.py _ranks_kernel: rank = #(logits >= logit of the token),
    # so the argmax has rank 1 (the Logprob.rank vLLM returns is 1-based)
    logits = torch.tensor([[0.5, 2.0, 1.0, 1.0], [3.0, -1.0, 0.0, 2.0]])
    tokens = torch.tensor([1, 2])
    out = torch.zeros(2, dtype=torch.int64)
    k.HostLaunch(k._ranks)[(2,)](out, logits, logits.stride(0), tokens, 4, BLOCK_SIZE=8192)
    assert out.tolist() == [1, 3]
    k.HostLaunch(k._ranks)[(2,)](out, logits, logits.stride(0), torch.tensor([2, 1]), 4,
                                 BLOCK_SIZE=8192)
    assert out.tolist() == [3, 4]  # row 0: token 2 ties token 3, both counted


def test_prompt_embeds_overlay_rows_past_computed_tokens_and_skip_token_id_positions():
    # vllm/v1/worker/gpu/model_states/prompt_embeds.py _apply_prompt_embeds_kernel: request
    # state 1 has 4 embedding rows, 1 already computed, 2 scheduled now: rows 1, 2 land at the
    # batch row's query start, except where the mask marks a token id (row 2 here)
    hidden = 3
    embeds = torch.arange(12, dtype=torch.float32).view(4, hidden)
    mask = torch.tensor([0, 0, 1, 0], dtype=torch.uint8)
    out = torch.full((5, hidden), -1.0)
    ptrs = torch.tensor([0, embeds.data_ptr()], dtype=torch.int64).view(torch.uint64)
    masks = torch.tensor([0, mask.data_ptr()], dtype=torch.int64).view(torch.uint64)
    k.HostLaunch(k._apply_prompt_embeds)[(2, 1)](
        out, out.stride(0), ptrs, masks, torch.tensor([0, 4], dtype=torch.int32),
        torch.tensor([0, 1]), torch.tensor([0, 3, 5], dtype=torch.int32),
        torch.tensor([7, 1]), hidden, TOKEN_BLOCK=16, BLOCK_SIZE=1024)
    # batch row 0 (state 0) has no embeddings: untouched; batch row 1 starts at token 3
    assert out[:3].eq(-1).all() and out[3].tolist() == [3.0, 4.0, 5.0]
    assert out[4].tolist() == [-1.0, -1.0, -1.0]  # embedding row 2 is a token id: kept


def test_gumbel_sample_greedy_rows_are_argmax_and_seeded_rows_repeat():
    logits = torch.tensor([[0.1, 2.0, 0.3], [1.0, 1.0, 1.0]])
    idx = torch.tensor([0, 1])
    temperature = torch.tensor([0.0, 1.0])
    seed = torch.tensor([0, 1234])
    pos = torch.tensor([4, 4])
    a = k.gumbel_sample(logits, idx, temperature, seed, pos, True, False)
    b = k.gumbel_sample(logits, idx, temperature, seed, pos, True, False)
    assert a[0] == 1 and torch.equal(a, b)
    u = k.murmur3_uniform32(torch.tensor([[1234]]), torch.tensor([[4]]), torch.arange(3)[None])
    assert ((u > 0) & (u < 1)).all()


@pytest.mark.parametrize("backend", ["native", "reference"])
def test_gumbel_greedy_batch_is_one_greedy_argmax_call(backend):
    """What test_sampler.py checks of the V1 AscendSampler, on MRv2's sampler stand-in: a
    greedy batch picks through one ``ascend_ops.greedy_argmax`` call, first maximal index."""
    import ascend_ops

    if backend == "native" and not ascend_ops.native_available():
        pytest.skip("ascend_ops._C not built")
    logits = torch.randint(-4, 5, (8, 1000)).float()  # ties: the first maximal index wins
    ascend_ops.reset_call_counts()
    with ascend_ops.use_backend(backend):
        out = k.gumbel_sample(logits, torch.arange(8), torch.zeros(8), torch.zeros(8),
                              torch.zeros(8), True, False)
    assert ascend_ops.call_counts(per_backend=True) == {("greedy_argmax", backend): 1}
    assert torch.equal(out, logits.argmax(dim=-1))


def test_gumbel_draft_logits_cache_stores_pre_temperature_logits():
    """``draft_sample_method="probabilistic"``: the drafter's logits (before temperature) go
    to [request row, draft step]; -1 rows are skipped; the draw repeats for a seed."""
    logits = torch.randn(3, 10, generator=torch.Generator().manual_seed(0))
    cache = torch.zeros(4, 2, 10)
    idx = torch.tensor([2, -1, 0])
    temperature = torch.tensor([0.5, 1.0, 2.0, 1.0])
    args = (logits, idx, temperature, torch.tensor([1, 2, 3, 4]), torch.tensor([5, 6, 7]), True,
            True)
    a = k.gumbel_sample(*args, logits_cache=cache, logits_cache_col=torch.tensor(1))
    assert torch.equal(cache[2, 1], logits[0]) and torch.equal(cache[0, 1], logits[2])
    assert cache[:, 0].abs().sum() == 0 and cache[1].abs().sum() == 0 and cache[3].abs().sum() == 0
    b = k.gumbel_sample(*args, logits_cache=cache, logits_cache_col=torch.tensor(1))
    assert torch.equal(a, b)
    c = k.gumbel_sample(*args, use_fp64=True)
    assert torch.equal(c, k.gumbel_sample(*args, use_fp64=True))
    u = k.murmur3_uniform64(torch.tensor([[1]]), torch.tensor([[5]]), torch.arange(10)[None])
    assert u.dtype == torch.float64 and ((u > 0) & (u < 1)).all()


def test_ngram_proposes_what_followed_the_latest_longest_match():
    ids = torch.tensor([[1, 2, 3, 9, 1, 2, 3, 8, 1, 2, 3, 0, 0]], dtype=torch.int32)
    drafts = torch.zeros(1, 3, dtype=torch.int64)
    out = k.ngram_propose(ids, torch.tensor([11], dtype=torch.int32), torch.tensor([0]),
                          torch.tensor([1], dtype=torch.int32), torch.tensor([3]), 2, 3, 3, drafts)
    # suffix [1, 2, 3] last occurs at 4..6 (before the suffix itself): drafts 8, 1, 2
    assert out.tolist() == [[8, 1, 2]]
    none = k.ngram_propose(torch.tensor([[4, 5, 6, 7]], dtype=torch.int32),
                           torch.tensor([4], dtype=torch.int32), torch.tensor([0]),
                           torch.tensor([1], dtype=torch.int32), torch.tensor([7]), 2, 3, 3, drafts)
    assert none.tolist() == [[7, 7, 7]]  # no match: the last sampled token


def test_greedy_rejection_accepts_matching_prefix_then_emits_target():
    # one request, 2 drafts -> 3 logits rows; rows' argmax: 4, 5, 6
    logits = torch.full((3, 8), -1.0)
    logits[0, 4] = logits[1, 5] = logits[2, 6] = 1.0
    cu = torch.tensor([0, 3], dtype=torch.int32)
    drafts_ok = torch.tensor([9, 4, 5])  # row 0 is the last committed token
    sampled, n = sd.rejection_sample(logits, None, drafts_ok, cu, None, torch.tensor([0]), None,
                                    None, torch.tensor([0.0]), None, 2)
    assert n.tolist() == [3] and sampled[0].tolist() == [4, 5, 6]
    drafts_bad = torch.tensor([9, 4, 1])
    sampled, n = sd.rejection_sample(logits, None, drafts_bad, cu, None, torch.tensor([0]), None,
                                    None, torch.tensor([0.0]), None, 2)
    assert n.tolist() == [2] and sampled[0, :2].tolist() == [4, 5]
