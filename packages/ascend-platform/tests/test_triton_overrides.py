# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Slot-mapping kernel (the numpy form host tensors take and the torch form) vs the slot formula
written out per token."""

from __future__ import annotations

import pytest
import torch
from vllm_ascend_platform.host import triton_overrides
from vllm_ascend_platform.host.triton_overrides import compute_slot_mapping
from vllm_ascend_platform.startup.version_check import uses_model_runner_v2

#: the tests of the runner's per-group block tables need Model Runner V1 (vLLM 0.33)
V1_BLOCK_TABLES = pytest.mark.skipif(
    uses_model_runner_v2(),
    reason="vLLM 0.34 deleted vllm/v1/worker/block_table.py (Model Runner V1) and the patch "
           "block-table-direct-slot-mapping with it: MRv2 computes every KV group's slots in "
           "one launch (block_table._compute_slot_mappings_kernel), whose host stand-in "
           "test_mrv2_kernels.py checks")

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


def _multi_group_table(modes):
    from vllm.v1.worker.block_table import MultiGroupBlockTable

    tables = MultiGroupBlockTable(max_num_reqs=4, max_num_batched_tokens=16, pin_memory=False,
                                  device=torch.device("cpu"), block_sizes=[16] * len(modes),
                                  max_num_blocks=[4] * len(modes), slot_mapping_modes=modes)
    ids = ([9, 4], [2]) if len(modes) == 2 else ([9, 4],)
    tables.add_row(ids, 0)
    tables.add_row(tuple([6] for _ in modes), 1)
    tables.commit_block_table(2)
    return tables


@V1_BLOCK_TABLES
def test_direct_slot_mapping_fills_each_table_past_the_launcher():
    """The runner's block tables call compute_slot_mapping directly: same slots as the formula,
    padding past the step's tokens, vLLM's class method untouched, a state-cache group skipped."""
    from vllm.v1.worker.block_table import BlockTable, SlotMappingMode

    vllm_method = BlockTable.compute_slot_mapping
    token, state = SlotMappingMode.TOKEN_TO_KV_SLOT, SlotMappingMode.NONE
    tables = _multi_group_table([token, state])
    assert triton_overrides.direct_slot_mapping(tables) == 1
    assert BlockTable.compute_slot_mapping is vllm_method
    assert "compute_slot_mapping" in vars(tables.block_tables[0])
    assert "compute_slot_mapping" not in vars(tables.block_tables[1])
    out = tables.block_tables[0].slot_mapping.gpu
    out.fill_(12345)
    # request 0: positions 15, 16 (blocks 9 then 4); request 1: position 3 (block 6)
    positions = torch.tensor([15, 16, 3], dtype=torch.int64)
    tables.compute_slot_mapping(2, torch.tensor([0, 2, 3], dtype=torch.int32), positions)
    assert out[:3].tolist() == [9 * 16 + 15, 4 * 16 + 0, 6 * 16 + 3]
    assert out[3:].tolist() == [-1] * 13


@V1_BLOCK_TABLES
def test_direct_slot_mapping_leaves_context_parallel_tables_alone():
    from vllm.v1.worker.block_table import SlotMappingMode

    tables = _multi_group_table([SlotMappingMode.TOKEN_TO_KV_SLOT])
    tables.block_tables[0].dcp_world_size = 2  # the KV cache split across decode-CP ranks
    assert triton_overrides.direct_slot_mapping(tables) == 0
    assert "compute_slot_mapping" not in vars(tables.block_tables[0])



@V1_BLOCK_TABLES
def test_runner_switches_only_where_the_override_is_vllms_kernel(monkeypatch):
    """On an NPU (override not registered: vLLM launches its own kernel) the runner leaves the
    block tables alone; on the host, where vLLM's launch ends in our override, it switches them."""
    from types import SimpleNamespace

    from vllm.v1.worker.block_table import SlotMappingMode
    from vllm_ascend_platform.worker.model_runner import NPUModelRunner

    tables = _multi_group_table([SlotMappingMode.TOKEN_TO_KV_SLOT])
    runner = SimpleNamespace(input_batch=SimpleNamespace(block_table=tables), emulated=False)
    monkeypatch.setattr(triton_overrides, "_registered", False)
    NPUModelRunner._adopt_input_batch(runner)
    assert "compute_slot_mapping" not in vars(tables.block_tables[0])
    monkeypatch.setattr(triton_overrides, "_registered", True)
    NPUModelRunner._adopt_input_batch(runner)
    assert "compute_slot_mapping" in vars(tables.block_tables[0])
