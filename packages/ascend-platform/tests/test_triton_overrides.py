# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Slot-mapping kernel (the numpy form host tensors take and the torch form) vs the slot formula
written out per token."""

from __future__ import annotations

import pytest
import torch
from vllm_ascend_platform import triton_overrides
from vllm_ascend_platform.triton_overrides import compute_slot_mapping

FORMS = {"numpy": triton_overrides._slot_mapping_numpy, "torch": triton_overrides._slot_mapping_torch}


def _run(form, num_tokens, max_tokens, qsl, positions, table, out, block):
    if form == "public":
        compute_slot_mapping(num_tokens, max_tokens, qsl, positions, table, table.shape[1], out, block)
    else:
        FORMS[form](max_tokens, qsl, positions, table, out, table.shape[1], block, -1)


@pytest.mark.parametrize("form", ["public", *FORMS])
def test_slot_mapping_matches_formula_and_pads(form):
    block = 16
    table = torch.tensor([[3, 7, 0], [5, 1, 2]], dtype=torch.int32)
    # request 0: positions 14..18 (crosses a block); request 1: position 40 (third block)
    positions = torch.tensor([14, 15, 16, 17, 18, 40], dtype=torch.int64)
    qsl = torch.tensor([0, 5, 6], dtype=torch.int32)
    out = torch.full((10,), 12345, dtype=torch.int64)
    _run(form, 6, 10, qsl, positions, table, out, block)
    want = [3 * 16 + 14, 3 * 16 + 15, 7 * 16 + 0, 7 * 16 + 1, 7 * 16 + 2, 2 * 16 + 8]
    assert out[:6].tolist() == want
    assert out[6:].tolist() == [-1] * 4


@pytest.mark.parametrize("form", list(FORMS))
def test_forms_agree_on_random_batches_and_empty_steps(form):
    g = torch.Generator().manual_seed(0)
    block, stride = 8, 12
    table = torch.randint(0, 2**29, (5, stride), dtype=torch.int32, generator=g)  # id * block > 2^31
    counts = [3, 0, 1, 7]  # a request with no tokens this step
    qsl = torch.tensor([0, *torch.tensor(counts).cumsum(0).tolist()], dtype=torch.int32)
    positions = torch.cat([torch.randint(0, block * stride - c, (1,), generator=g) + torch.arange(c)
                           for c in counts]).to(torch.int64)
    out = torch.full((16,), 7, dtype=torch.int64)
    _run(form, 11, 16, qsl, positions, table, out, block)
    req = [r for r, c in enumerate(counts) for _ in range(c)]
    want = [int(table[r, p // block]) * block + p % block for r, p in zip(req, positions.tolist(), strict=True)]
    assert out[:11].tolist() == want and out[11:].tolist() == [-1] * 5
    empty = torch.full((4,), 7, dtype=torch.int64)
    _run(form, 0, 4, torch.zeros(1, dtype=torch.int32), positions[:0], table, empty, block)
    assert empty.tolist() == [-1] * 4
