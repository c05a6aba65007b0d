# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Shared fixture: the simulated NPU (docs/simulated-npu.md) with a clean graph-parameter record."""

from __future__ import annotations

import pytest


@pytest.fixture
def sim():
    """``ascend_ops.simulator`` installed for one test (1 GiB), captured attention calls cleared
    before and after; skipped without the torch-npu wheel."""
    import vllm_ascend_attention.backends.mla  # noqa: F401  (vLLM/transformers imported before the simulator)
    from ascend_ops import simulator
    from vllm_ascend_attention import graph_params

    try:
        simulator.install(capacity_bytes=1 << 30)
    except simulator.SimulatedNpuError as exc:
        pytest.skip(str(exc))
    graph_params.clear()
    try:
        yield simulator
    finally:
        graph_params.clear()
        simulator.uninstall()
