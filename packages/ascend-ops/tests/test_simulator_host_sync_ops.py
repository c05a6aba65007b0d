# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Aten ops whose NPU kernels read device data on the host (``ascend_ops.simulator.host_sync_ops``,
from op-plugin's kernel sources): counted as host syncs by ``simulator.tracking()`` and refused
inside an NPU graph capture, while the same op with the arguments that avoid the read is not."""

from __future__ import annotations

import pytest
import torch


def test_every_entry_cites_an_op_plugin_kernel():
    from ascend_ops.simulator import host_sync_ops

    table = host_sync_ops.table()
    assert "aten.bincount.default" in table
    for op, why in table.items():
        assert "Ascend/op-plugin@517f2e7 op_plugin/ops/opapi/" in why and ".cpp:" in why, op


def test_tracking_counts_the_kernels_host_reads(simulated_npu):
    from ascend_ops import simulator

    ids = torch.tensor([2, 0, 2, 1])
    with simulator.tracking() as ledger:
        torch.bincount(ids, minlength=4)
        torch.histc(ids.float(), bins=3)  # min == max == 0: range from the data
    assert ledger.host_syncs == 2
    whats = [what for what, _, _ in ledger.host_sync_sites]
    assert any("BincountKernelNpuOpApi.cpp" in w for w in whats)
    assert any("HistcKernelNpuOpApi.cpp" in w for w in whats)
    ledger.reset()
    with simulator.tracking() as ledger:  # the same ops with host-known sizes: no read
        torch.histc(ids.float(), bins=3, min=0, max=3)
        torch.zeros(4, dtype=torch.int64).scatter_add_(0, ids, torch.ones_like(ids))
        torch.empty(0, dtype=torch.int64).bincount()  # empty input returns before the reads
    assert ledger.host_syncs == 0


def test_bincount_is_refused_inside_a_capture(simulated_npu):
    from ascend_ops.simulator import SimulatedNpuError

    ids = torch.tensor([2, 0, 2, 1])
    with pytest.raises(SimulatedNpuError, match=r"host sync inside NPU graph capture: torch\.bincount.*"
                                                r"BincountKernelNpuOpApi\.cpp"):
        with torch.npu.graph(torch.npu.NPUGraph()):
            torch.bincount(ids, minlength=4)
