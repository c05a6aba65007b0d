# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The one error type the simulated NPU raises for a broken operator or runtime rule."""

from __future__ import annotations


class SimulatedNpuError(RuntimeError):
    """A call the real NPU stack would refuse: an operator constraint (dtype, layout, contiguity,
    index dtype, block/head size) named as ``"<operator>: <rule>"``, a host sync inside a graph
    capture, a missing torch-npu wheel (with the command that fetches it), or a misuse of the
    graph-task API."""
