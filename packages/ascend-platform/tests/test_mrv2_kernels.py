# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The MRv2 host stand-ins (vllm_ascend_platform.host.mrv2_kernels) on hand-made batches.

The module imports only torch. Expected values follow the
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
    """MRv2's sampler stand-in: a greedy batch picks through one ``ascend_ops.greedy_argmax``
    call, first maximal index."""
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


# ---- the vectorized step kernels against per-request references ------------------------------
#
# Each ``_ref_*`` is a plain per-request loop written from the Triton kernel's program body
# (vllm/v1/worker/gpu/input_batch.py, block_table.py, buffer_utils.py in vLLM 0.34): the form
# the stand-ins had before they were vectorized. Random batches (prefill, chunked prefill,
# decode, drafts, masked rows) must give identical tensors.

import contextlib  # noqa: E402
import random  # noqa: E402

import pytest  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402


def _ref_prepare_pos_seq_lens(idx, qsl, done, pos, seq_lens):
    q = qsl.tolist()
    for b, r in enumerate(idx.tolist()):
        d = int(done[r])
        pos[q[b]:q[b + 1]] = torch.arange(d, d + q[b + 1] - q[b])
        seq_lens[b] = d + q[b + 1] - q[b]
    seq_lens[idx.shape[0]:] = 0


def _ref_prepare_prefill_inputs(input_ids, next_prefill, idx, qsl, all_ids, plen, done):
    q = qsl.tolist()
    for b, r in enumerate(idx.tolist()):
        p, d = int(plen[r]), int(done[r])
        if d >= p:
            continue
        n = q[b + 1] - q[b]
        input_ids[q[b]:q[b + 1]] = all_ids[r, d:d + n]
        for j in range(next_prefill.shape[0]):
            at = d + n + j
            next_prefill[j, r] = int(all_ids[r, at]) if at < p else 0


def _ref_combine(input_ids, idx, last, qsl, seq_lens, plen, drafts, cu, num_logits, new=1):
    out = torch.empty(num_logits, dtype=torch.int64)
    q, c = qsl.tolist(), cu.tolist()
    for b, r in enumerate(idx.tolist()):
        n_logits = c[b + 1] - c[b]
        end = q[b + 1]
        out[c[b]:c[b + 1]] = torch.arange(end - n_logits, end)
        s, p = int(seq_lens[b]), int(plen[r])
        if s <= p:
            continue
        if new > 0 and s - n_logits >= p:
            input_ids[end - n_logits] = last[r]
        n_draft = n_logits - new
        if n_draft > 0:
            input_ids[end - n_draft:end] = drafts[r, :n_draft]
    return out


def _ref_post_update(idx, done, last, counts, sampled, num_sampled, num_rejected, qsl, all_ids,
                     total_len, drafts=None, drafts_out=None):
    for b, r in enumerate(idx.tolist()):
        if r < 0:
            continue
        if drafts is not None:
            drafts_out[r] = drafts[b]
        total, k = int(total_len[r]), int(num_sampled[b])
        if k > 0:
            last[r] = sampled[b, k - 1]
            total_len[r] = total + k
        for i in range(k):
            tok = int(sampled[b, i])
            all_ids[r, total + i] = tok
            if counts is not None:
                counts[r, tok] += 1
        qlen = int(qsl[b + 1] - qsl[b]) if qsl is not None else 0
        done[r] += qlen - int(num_rejected[b])


def _ref_slot_mappings(max_num_tokens, idx, qsl, pos, tables, block_sizes, enabled, out, pad):
    for g, table in enumerate(tables):
        bs, on = int(block_sizes[g]), bool(enabled[g])
        q = qsl.tolist()
        for b, r in enumerate(idx.tolist()):
            for t in range(q[b], q[b + 1]):
                p = int(pos[t])
                if r < 0 or not on:
                    out[g, t] = pad
                else:
                    out[g, t] = int(table[r, p // bs]) * bs + p % bs
        out[g, q[-1]:max_num_tokens] = pad


def _ref_gather(idx, srcs, dsts, num_blocks, num_reqs, num_rows, done, reach, block_sizes,
                mask_sw):
    for g, (src, dst) in enumerate(zip(srcs, dsts, strict=True)):
        for b in range(num_rows):
            if b >= num_reqs:
                dst[b] = 0
                continue
            r = int(idx[b])
            n = int(num_blocks[g, r])
            null = 0
            if mask_sw and int(reach[g]) > 0:
                null = max(int(done[r]) - int(reach[g]), 0) // int(block_sizes[g])
            for j in range(n):
                dst[b, j] = 0 if j < null else src[r, j]


def _ref_apply_write(out, stride, indices, starts, contents, cu):
    flat = out.view(-1)
    prev = 0
    for r, s, e in zip(indices.tolist(), starts.tolist(), cu.tolist(), strict=True):
        at = r * stride + s
        flat[at:at + e - prev] = contents[prev:e]
        prev = e


def _batch(rng, max_num_reqs=6, max_len=40, num_tokens_buf=128, drafts=0):
    """A random batch: per request state slot, prefill length, computed tokens and query length
    (some prefilling, some chunked, some decoding with up to ``drafts`` drafts)."""
    n = rng.randint(1, max_num_reqs - 1)
    slots = rng.sample(range(max_num_reqs), n)
    plen = torch.zeros(max_num_reqs, dtype=torch.int32)
    done = torch.zeros(max_num_reqs, dtype=torch.int32)
    qlens, n_logits = [], []
    for r in slots:
        p = rng.randint(1, max_len // 2)
        plen[r] = p
        kind = rng.choice(["prefill", "chunk", "decode"] + (["tail"] if drafts else []))
        if kind == "tail":  # the prompt's last chunk with drafts after it (first logit in it)
            d = rng.randint(0, p - 1)
            nd = rng.randint(1, drafts)
            q = p - d + nd
            n_logits.append(1 + nd)
        elif kind == "decode":
            d = rng.randint(p, max_len - drafts - 2)
            nd = rng.randint(0, drafts)
            q = 1 + nd
            n_logits.append(1 + nd)
        else:
            d = rng.randint(0, p - 1)
            q = rng.randint(1, p - d) if kind == "prefill" else max(1, (p - d) // 2)
            n_logits.append(1)
        done[r] = d
        qlens.append(q)
    qsl = torch.tensor([0] + list(torch.tensor(qlens).cumsum(0).tolist()), dtype=torch.int32)
    cu = torch.tensor([0] + list(torch.tensor(n_logits).cumsum(0).tolist()), dtype=torch.int32)
    assert int(qsl[-1]) <= num_tokens_buf
    return torch.tensor(slots), plen, done, qsl, cu


@pytest.mark.parametrize("seed", range(12))
def test_vectorized_input_kernels_match_per_request_loops(seed):
    rng = random.Random(seed)
    torch.manual_seed(seed)
    drafts = rng.choice([0, 0, 3])
    idx, plen, done, qsl, cu = _batch(rng, drafts=drafts)
    n, buf = idx.shape[0], 128
    all_ids = torch.randint(0, 1000, (6, 48), dtype=torch.int32)

    pos_a = torch.randint(-5, 99, (buf,))
    pos_b, sl_a = pos_a.clone(), torch.full((8,), 7, dtype=torch.int32)
    sl_b = sl_a.clone()
    k.prepare_pos_seq_lens(idx, qsl, done, pos_a, sl_a)
    _ref_prepare_pos_seq_lens(idx, qsl, done, pos_b, sl_b)
    assert torch.equal(pos_a, pos_b) and torch.equal(sl_a, sl_b)

    ids_a = torch.randint(0, 1000, (buf,), dtype=torch.int32)
    ids_b = ids_a.clone()
    ahead_a = torch.randint(0, 1000, (rng.choice([0, 2]), 6), dtype=torch.int32)
    ahead_b = ahead_a.clone()
    k.prepare_prefill_inputs(ids_a, ahead_a, idx, qsl, all_ids, plen, done)
    _ref_prepare_prefill_inputs(ids_b, ahead_b, idx, qsl, all_ids, plen, done)
    assert torch.equal(ids_a, ids_b) and torch.equal(ahead_a, ahead_b)

    last = torch.randint(0, 1000, (6, 1))  # [max_num_reqs, 1] as vLLM 0.34 keeps it
    draft_tokens = torch.randint(0, 1000, (6, drafts))
    seq_lens = sl_a[:n]
    li_a = k.combine_sampled_and_draft_tokens(ids_a, idx, last, qsl, seq_lens, plen,
                                              draft_tokens, cu, int(cu[-1]))
    li_b = _ref_combine(ids_b, idx, last, qsl, seq_lens, plen, draft_tokens, cu, int(cu[-1]))
    assert torch.equal(li_a, li_b) and torch.equal(ids_a, ids_b)


@pytest.mark.parametrize("seed", range(12))
def test_vectorized_post_update_matches_per_request_loop(seed):
    rng = random.Random(seed)
    torch.manual_seed(seed)
    width = rng.choice([1, 1, 4])
    idx, plen, done, qsl, cu = _batch(rng, drafts=width - 1)
    n = idx.shape[0]
    if rng.random() < 0.4:  # rows masked by the caller (idx -1) change nothing
        idx = idx.clone()
        idx[rng.randrange(n)] = -1
    vocab = 50
    sampled = torch.randint(0, vocab, (n, width))
    num_sampled = torch.tensor([rng.randint(0, width) for _ in range(n)], dtype=torch.int32)
    num_rejected = torch.tensor([rng.randint(0, 1) for _ in range(n)], dtype=torch.int32)
    total = torch.randint(0, 20, (6,), dtype=torch.int32)
    with_drafts = width > 1
    args_a = dict(
        num_computed_tokens=done.clone(),
        # [max_num_reqs, 1] as vLLM 0.34 keeps it (states.py)
        last_sampled_tokens=torch.randint(0, vocab, (6, 1)),
        output_bin_counts=torch.randint(0, 3, (6, vocab), dtype=torch.int32),
        all_token_ids=torch.randint(0, vocab, (6, 48), dtype=torch.int32), total_len=total,
        draft_tokens_out=torch.randint(0, vocab, (6, width - 1)) if with_drafts else None)
    args_b = {key: (v.clone() if v is not None else None) for key, v in args_a.items()}
    drafts = torch.randint(0, vocab, (n, width - 1)) if with_drafts else None
    use_qsl = qsl if rng.random() < 0.8 else None
    k.post_update(idx, args_a["num_computed_tokens"], args_a["last_sampled_tokens"],
                  args_a["output_bin_counts"], sampled, num_sampled, num_rejected, use_qsl,
                  args_a["all_token_ids"], args_a["total_len"], drafts, args_a["draft_tokens_out"])
    _ref_post_update(idx, args_b["num_computed_tokens"], args_b["last_sampled_tokens"],
                     args_b["output_bin_counts"], sampled, num_sampled, num_rejected, use_qsl,
                     args_b["all_token_ids"], args_b["total_len"], drafts,
                     args_b["draft_tokens_out"])
    for key in args_a:
        if args_a[key] is not None:
            assert torch.equal(args_a[key], args_b[key]), key


@pytest.mark.parametrize("seed", range(8))
def test_vectorized_block_table_kernels_match_per_request_loops(seed):
    rng = random.Random(seed)
    torch.manual_seed(seed)
    idx, plen, done, qsl, cu = _batch(rng)
    n, max_tokens = idx.shape[0], 128
    if rng.random() < 0.3:  # a dummy request (idx -1): PAD for its tokens
        idx = idx.clone()
        idx[rng.randrange(n)] = -1
    groups = rng.choice([1, 2])
    tables = [torch.randint(1, 90, (6, 8), dtype=torch.int32) for _ in range(groups)]
    k.register_pointers(tables)
    ptrs = torch.tensor([t.data_ptr() for t in tables], dtype=torch.int64).view(torch.uint64)
    block_sizes = torch.tensor([rng.choice([4, 8]) for _ in range(groups)], dtype=torch.int32)
    enabled = torch.tensor([rng.random() < 0.8 for _ in range(groups)])
    pos = torch.randint(0, 31, (max_tokens,))
    out_a = torch.randint(0, 5, (groups, max_tokens + 4))
    out_b = out_a.clone()
    k.HostLaunch(k._compute_slot_mappings)[(groups, n + 1)](
        max_tokens, idx, qsl, pos, ptrs, None, block_sizes, enabled, None, out_a,
        out_a.stride(0), 0, PAD_ID=-1)
    _ref_slot_mappings(max_tokens, idx, qsl, pos, tables, block_sizes, enabled, out_b, -1)
    assert torch.equal(out_a, out_b)

    idx = idx.clamp_min(0)
    dst_a = [torch.randint(0, 9, (7, 8), dtype=torch.int32) for _ in range(groups)]
    dst_b = [d.clone() for d in dst_a]
    k.register_pointers(dst_a)
    dst_ptrs = torch.tensor([d.data_ptr() for d in dst_a], dtype=torch.int64).view(torch.uint64)
    num_blocks = torch.randint(0, 9, (groups, 6), dtype=torch.int32)
    reach = torch.tensor([rng.choice([0, 5, 12]) for _ in range(groups)], dtype=torch.int32)
    mask_sw = rng.random() < 0.5
    num_rows = rng.randint(n, 7)
    k.HostLaunch(k._gather_block_tables)[(groups, num_rows)](
        idx, ptrs, dst_ptrs, None, num_blocks, num_blocks.stride(0), n, done, reach,
        block_sizes, MASK_SLIDING_WINDOW=mask_sw)
    _ref_gather(idx, tables, dst_b, num_blocks, n, num_rows, done, reach, block_sizes, mask_sw)
    for a, b in zip(dst_a, dst_b, strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("seed", range(6))
def test_vectorized_apply_write_matches_per_write_loop(seed):
    rng = random.Random(seed)
    out_a = torch.zeros(5, 9, dtype=torch.int32)
    out_b = out_a.clone()
    rows = rng.sample(range(5), rng.randint(1, 5))
    starts = [rng.randint(0, 4) for _ in rows]
    lens = [rng.randint(1, 9 - s) for s in starts]
    cu = torch.tensor(lens).cumsum(0).to(torch.int32)
    contents = torch.randint(1, 100, (int(cu[-1]),), dtype=torch.int32)
    k.HostLaunch(k._apply_write)[(len(rows), 1)](
        out_a, out_a.stride(0), torch.tensor(rows, dtype=torch.int32),
        torch.tensor(starts, dtype=torch.int32), contents, cu, None, MULTI_GROUP=False)
    _ref_apply_write(out_b, out_b.stride(0), torch.tensor(rows), torch.tensor(starts), contents,
                     cu)
    assert torch.equal(out_a, out_b)


def test_multi_group_apply_write_writes_each_group_through_its_pointer():
    a, b = torch.zeros(3, 4, dtype=torch.int32), torch.zeros(2, 6, dtype=torch.int32)
    k.register_pointers([a, b])
    ptrs = torch.tensor([a.data_ptr(), b.data_ptr()], dtype=torch.int64).view(torch.uint64)
    k.HostLaunch(k._apply_write)[(3, 1)](
        ptrs, torch.tensor([4, 6]), torch.tensor([2, 1, 0], dtype=torch.int32),
        torch.tensor([1, 3, 0], dtype=torch.int32), torch.tensor([7, 8, 9, 5, 6], dtype=torch.int32),
        torch.tensor([2, 4, 5], dtype=torch.int32), torch.tensor([0, 1, 0], dtype=torch.int32),
        MULTI_GROUP=True)
    assert a.tolist() == [[6, 0, 0, 0], [0, 0, 0, 0], [0, 7, 8, 0]]
    assert b.tolist() == [[0] * 6, [0, 0, 0, 9, 5, 0]]


def test_gumbel_sample_greedy_rows_match_argmax_in_a_mixed_batch():
    torch.manual_seed(0)
    logits = torch.randn(4, 37)
    logits[2, 5] = float("nan")  # NaN wins, as torch.argmax
    temperature = torch.tensor([0.0, 0.7, 0.0, 1.0])
    out = k.gumbel_sample(logits, torch.tensor([0, 1, 2, 3]), temperature,
                          torch.tensor([1, 2, 3, 4]), torch.tensor([9, 9, 9, 9]), True, False)
    assert out[0] == logits[0].argmax() and out[2] == 5
    # a sampled row equals argmax(logits / T + Gumbel noise) of vLLM's murmur3 stream
    u = k.murmur3_uniform32(torch.tensor([[2]]), torch.tensor([[9]]), torch.arange(37)[None])
    assert out[1] == (logits[1] / 0.7 - torch.log(-torch.log1p(-u[0]))).argmax()


class _SyncCounter(TorchDispatchMode):
    """Counts what the simulated NPU's ledger counts as host syncs
    (``ascend_ops.simulator.recording.sync_name``)."""

    def __init__(self):
        super().__init__()
        self.syncs: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        from ascend_ops.simulator.recording import sync_name

        kwargs = kwargs or {}
        what = sync_name(func, args, kwargs)
        if what is not None:
            self.syncs.append(what)
        return func(*args, **kwargs)


@contextlib.contextmanager
def _no_host_reads(monkeypatch):
    """Fail on reads the dispatch mode cannot see (``tolist``/``item``/``numpy``)."""
    def refuse(name):
        def read(*_a, **_k):
            raise AssertionError(f"host read: Tensor.{name}")
        return read
    for name in ("tolist", "item", "numpy"):
        monkeypatch.setattr(torch.Tensor, name, refuse(name))
    counter = _SyncCounter()
    with counter:
        yield counter
    monkeypatch.undo()


def test_step_kernels_read_nothing_back_to_the_host(monkeypatch):
    rng = random.Random(3)
    idx, plen, done, qsl, cu = _batch(rng, drafts=2)
    n = idx.shape[0]
    table = torch.randint(1, 90, (6, 8), dtype=torch.int32)
    dst = torch.zeros(6, 8, dtype=torch.int32)
    k.register_pointers([table, dst])
    ptrs = torch.tensor([table.data_ptr()], dtype=torch.int64).view(torch.uint64)
    dst_ptrs = torch.tensor([dst.data_ptr()], dtype=torch.int64).view(torch.uint64)
    # the pointer tables are read once (cached on the table), before any step
    k._tensors_at(ptrs), k._tensors_at(dst_ptrs)
    pos, seq_lens = torch.zeros(128, dtype=torch.int64), torch.zeros(8, dtype=torch.int32)
    ids = torch.zeros(128, dtype=torch.int32)
    all_ids = torch.randint(0, 50, (6, 48), dtype=torch.int32)
    slots = torch.zeros(1, 128, dtype=torch.int64)
    with _no_host_reads(monkeypatch) as seen:
        k.prepare_prefill_inputs(ids, torch.zeros(2, 6, dtype=torch.int32), idx, qsl, all_ids,
                                 plen, done)
        k.prepare_pos_seq_lens(idx, qsl, done, pos, seq_lens)
        k.combine_sampled_and_draft_tokens(ids, idx, torch.zeros(6, dtype=torch.int64), qsl,
                                           seq_lens[:n], plen, torch.zeros(6, 2, dtype=torch.int64),
                                           cu, 7)
        k.HostLaunch(k._gather_block_tables)[(1, n + 1)](
            idx, ptrs, dst_ptrs, None, torch.full((1, 6), 3, dtype=torch.int32), 6, n, done,
            torch.tensor([4]), torch.tensor([8]), MASK_SLIDING_WINDOW=True)
        k.HostLaunch(k._compute_slot_mappings)[(1, n + 1)](
            128, idx, qsl, pos, ptrs, None, torch.tensor([8]), torch.tensor([True]), None, slots,
            128, 0, PAD_ID=-1)
        num_sampled, num_rejected = k.get_num_sampled_and_rejected(
            torch.ones(n, dtype=torch.int32), seq_lens, cu, idx, plen)
        k.post_update(idx, done.clone(), torch.zeros(6, dtype=torch.int64),
                      torch.zeros(6, 50, dtype=torch.int32), torch.randint(0, 50, (n, 3)),
                      num_sampled, num_rejected, qsl, all_ids, torch.zeros(6, dtype=torch.int32),
                      torch.zeros(n, 2, dtype=torch.int64), torch.zeros(6, 2, dtype=torch.int64))
        k.gumbel_sample(torch.randn(n, 50), idx, torch.rand(6), torch.arange(6), pos[:n], True,
                        False)
        k.HostLaunch(k._apply_write)[(2, 1)](
            dst, 8, torch.tensor([0, 3], dtype=torch.int32), torch.tensor([1, 0], dtype=torch.int32),
            torch.tensor([5, 6, 7], dtype=torch.int32), torch.tensor([2, 3], dtype=torch.int32),
            None, MULTI_GROUP=False)
    assert seen.syncs == []
