# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The runner's ACL graph capture context (``vllm_ascend_platform.worker.graph_capture``).

End to end (TP=2 with graphs on) is ``tests/e2e/test_parallel.py::test_tp2_graph_mode_matches_tp1``;
here: the scoped substitution, its restore on error, the context it yields and the drift check.
"""

from __future__ import annotations

import importlib

import pytest
import torch
from vllm_ascend_platform.startup.version_check import uses_model_runner_v2

if uses_model_runner_v2():
    pytest.skip(
        "V1 only: the graph-capture patch substitutes graph_capture in "
        "vllm.v1.worker.gpu_model_runner, which vLLM 0.34 deletes; on Model Runner V2 the graph "
        "layer's ACLGraphManager captures on its own ascend_ops.device side stream (no CUDA "
        "communicator assertion), tested in test_mrv2_graphs.py and "
        "packages/ascend-graph/tests/test_mrv2_manager.py", allow_module_level=True)

from vllm_ascend_platform.worker import graph_capture as gc  # noqa: E402

runner = importlib.import_module(gc.RUNNER_MODULE)


def test_vllm_group_capture_refuses_non_cuda_communicators():
    """Why the hook exists: vLLM 0.32's GroupCoordinator.graph_capture asserts on any other
    device communicator (ours included) for groups with more than one rank."""
    from ascend_ops import device as npu
    from vllm.distributed.parallel_state import GraphCaptureContext, GroupCoordinator

    group = object.__new__(GroupCoordinator)
    group.device_communicator = object()  # stands in for NPUCommunicator (not a CUDA/XPU one)
    with pytest.raises(AssertionError):
        with group.graph_capture(GraphCaptureContext(npu.Stream())):
            pass


def test_capture_context_substitutes_and_restores():
    original = runner.graph_capture
    with gc.capture_context():
        assert runner.graph_capture is gc.npu_graph_capture
    assert runner.graph_capture is original


def test_capture_context_restores_after_an_error():
    original = runner.graph_capture
    with pytest.raises(ValueError, match="boom"):
        with gc.capture_context():
            raise ValueError("boom")
    assert runner.graph_capture is original


def test_npu_graph_capture_yields_vllm_context_on_a_device_stream():
    from ascend_ops import device as npu
    from vllm.distributed.parallel_state import GraphCaptureContext

    with gc.npu_graph_capture(torch.device("cpu")) as ctx:
        assert isinstance(ctx, GraphCaptureContext)
        assert isinstance(ctx.stream, npu.Stream)


def test_drift_is_refused(monkeypatch):
    monkeypatch.setattr(runner, "graph_capture", lambda device: None)
    with pytest.raises(RuntimeError, match="enforce-eager"):
        with gc.capture_context():
            pass
