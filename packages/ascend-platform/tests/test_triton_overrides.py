# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Torch slot-mapping kernel vs the slot formula written out per token."""

from __future__ import annotations

import torch
from vllm_ascend_platform.triton_overrides import compute_slot_mapping


def test_slot_mapping_matches_formula_and_pads():
    block = 16
    table = torch.tensor([[3, 7, 0], [5, 1, 2]], dtype=torch.int32)
    # request 0: positions 14..18 (crosses a block); request 1: position 40 (third block)
    positions = torch.tensor([14, 15, 16, 17, 18, 40], dtype=torch.int64)
    qsl = torch.tensor([0, 5, 6], dtype=torch.int32)
    out = torch.full((10,), 12345, dtype=torch.int64)
    compute_slot_mapping(6, 10, qsl, positions, table, 3, out, block)
    want = [3 * 16 + 14, 3 * 16 + 15, 7 * 16 + 0, 7 * 16 + 1, 7 * 16 + 2, 2 * 16 + 8]
    assert out[:6].tolist() == want
    assert out[6:].tolist() == [-1] * 4
