# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""CPU emulation's numpy step kernels (host/mrv2_kernels_np.py) against the torch stand-ins
(host/mrv2_kernels.py, whose semantics test_mrv2_kernels.py checks against vLLM 0.34's kernel
contracts): the same random batches through both, every written tensor and every result equal
bit for bit. The module imports only torch and numpy, so these run with vLLM 0.33 too."""

from __future__ import annotations

import random

import pytest
import torch
from test_mrv2_kernels import _batch
from vllm_ascend_platform.host import mrv2_kernels as k
from vllm_ascend_platform.host import mrv2_kernels_np as npk


def _clones(*ts):
    return [t.clone() for t in ts]


def _equal(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert torch.equal(a, b)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("drafts", [0, 2])
def test_input_kernels_equal_the_torch_stand_ins(seed, drafts):
    rng = random.Random(seed * 7 + drafts)
    idx, plen, done, qsl, cu = _batch(rng, drafts=drafts)
    n = idx.shape[0]
    num_tokens = int(qsl[-1])
    # positions / seq_lens (seq_lens longer than the batch: the padded rows are zeroed)
    pos_t, sl_t = torch.full((128,), -3, dtype=torch.int64), torch.full((8,), 9, dtype=torch.int32)
    pos_n, sl_n = _clones(pos_t, sl_t)
    k.prepare_pos_seq_lens(idx, qsl, done, pos_t, sl_t)
    npk.prepare_pos_seq_lens(idx, qsl, done, pos_n, sl_n)
    _equal(pos_t, pos_n), _equal(sl_t, sl_n)
    # combine: last sampled token and drafts into input_ids, logits indices
    ids_t = torch.randint(0, 50, (128,), dtype=torch.int32)
    ids_n = ids_t.clone()
    last = torch.randint(100, 200, (6, 1), dtype=torch.int64)
    draft_tokens = torch.randint(300, 400, (6, drafts), dtype=torch.int64)
    num_logits = int(cu[n])
    out_t = k.combine_sampled_and_draft_tokens(ids_t, idx, last, qsl, sl_t[:n], plen,
                                               draft_tokens, cu, num_logits)
    out_n = npk.combine_sampled_and_draft_tokens(ids_n, idx, last, qsl, sl_n[:n], plen,
                                                 draft_tokens, cu, num_logits)
    _equal(out_t, out_n), _equal(ids_t, ids_n)
    # sampled / rejected counts
    sampled_t = torch.tensor([rng.randint(0, 1 + drafts) for _ in range(n)], dtype=torch.int32)
    sampled_n = sampled_t.clone()
    ns_t, nr_t = k.get_num_sampled_and_rejected(sampled_t, sl_t, cu, idx, plen)
    ns_n, nr_n = npk.get_num_sampled_and_rejected(sampled_n, sl_n, cu, idx, plen)
    _equal(ns_t, ns_n), _equal(nr_t, nr_n)
    assert num_tokens <= 128


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("width", [1, 3])
def test_post_update_equals_the_torch_stand_in(seed, width):
    rng = random.Random(100 + seed)
    max_reqs, n = 6, rng.randint(1, 5)
    idx = torch.tensor(rng.sample(range(max_reqs), n))
    if rng.random() < 0.5:
        idx[rng.randrange(n)] = -1  # a masked row changes nothing
    state = dict(
        done=torch.randint(0, 20, (max_reqs,), dtype=torch.int32),
        last=torch.zeros(max_reqs, 1, dtype=torch.int64),
        counts=torch.zeros(max_reqs, 60, dtype=torch.int32),
        all_ids=torch.randint(0, 50, (max_reqs, 40), dtype=torch.int32),
        total=torch.randint(0, 30, (max_reqs,), dtype=torch.int32),
        drafts_out=torch.zeros(max_reqs, 2, dtype=torch.int64))
    sampled = torch.randint(0, 60, (n, width))
    num_sampled = torch.tensor([rng.randint(0, width) for _ in range(n)], dtype=torch.int32)
    num_rejected = torch.tensor([rng.randint(0, 1) for _ in range(n)], dtype=torch.int32)
    qsl = torch.tensor([0] + sorted(rng.sample(range(1, 30), n)), dtype=torch.int32)
    drafts = torch.randint(0, 60, (n, 2)) if width > 1 else None
    with_qsl, with_counts = rng.random() < 0.7, rng.random() < 0.7
    results = []
    for fn in (k.post_update, npk.post_update):
        s = {name: t.clone() for name, t in state.items()}
        fn(idx, s["done"], s["last"], s["counts"] if with_counts else None, sampled,
           num_sampled, num_rejected, qsl if with_qsl else None, s["all_ids"], s["total"],
           drafts, s["drafts_out"] if drafts is not None else None)
        results.append(s)
    for name in state:
        _equal(results[0][name], results[1][name])


@pytest.mark.parametrize("seed", range(8))
def test_block_table_kernels_equal_the_torch_stand_ins(seed):
    rng = random.Random(200 + seed)
    idx, _plen, done, qsl, _cu = _batch(rng)
    n = idx.shape[0]
    groups = rng.randint(1, 2)
    src = [torch.randint(1, 90, (6, 8), dtype=torch.int32) for _ in range(groups)]
    dst = {impl: [torch.full((6, 8), -7, dtype=torch.int32) for _ in range(groups)]
           for impl in ("t", "n")}
    k.register_pointers(src + dst["t"] + dst["n"])

    def table(ts):
        return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64).view(torch.uint64)

    num_blocks = torch.randint(0, 10, (groups, 6), dtype=torch.int32)
    rows = n + rng.randint(0, 2)
    for impl, mod in (("t", k), ("n", npk)):
        k.HostLaunch(mod._gather_block_tables)[(groups, rows)](
            idx, table(src), table(dst[impl]), None, num_blocks, 6, n, done,
            torch.zeros(groups, dtype=torch.int32), torch.full((groups,), 16, dtype=torch.int32))
    for a, b in zip(dst["t"], dst["n"], strict=True):
        _equal(a, b)
    # slot mappings from positions (the positions of this batch), one group disabled
    pos = torch.zeros(128, dtype=torch.int64)
    k.prepare_pos_seq_lens(idx, qsl, done, pos, torch.zeros(8, dtype=torch.int32))
    sizes = torch.tensor([rng.choice([4, 16]) for _ in range(groups)], dtype=torch.int32)
    enabled = torch.tensor([True] + [rng.random() < 0.5 for _ in range(groups - 1)])
    if rng.random() < 0.3:
        idx = idx.clone()
        idx[0] = -1  # a dummy request: PAD
    max_tokens = rng.choice([int(qsl[-1]), 64, 128])
    outs = []
    for mod in (k, npk):
        out = torch.full((groups, 128), 5, dtype=torch.int64)
        k.HostLaunch(mod._compute_slot_mappings)[(groups, n + 1)](
            max_tokens, idx, qsl, pos, table(src), None, sizes, enabled, None, out,
            out.stride(0), 0, PAD_ID=-1)
        outs.append(out)
    _equal(*outs)


def test_emulation_entries_cover_the_torch_kernels():
    entries = npk.emulation_kernels()
    assert set(entries) <= set(k.KERNELS)
    assert len(entries) == 6
