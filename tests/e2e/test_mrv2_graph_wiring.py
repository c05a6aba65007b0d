# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The platform's graph-mode scope builds the graph layer's ``ACLGraphManager`` on Model Runner
V2 (vLLM 0.34), with every layer installed (the platform's own session has no graph layer, so
its unit test, ``packages/ascend-platform/tests/test_mrv2_graphs.py``, resolves a stand-in).
No engine starts here; the graph tests in this folder run the manager end to end."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

from vllm.config import CUDAGraphMode
from vllm.v1.worker.gpu.cudagraph_utils import ModelCudaGraphManager
from vllm_ascend_graph.mrv2_manager import ACLGraphManager
from vllm_ascend_platform.worker import mrv2_graphs


def test_graph_mode_scope_builds_the_graph_layers_manager():
    runner = importlib.import_module(mrv2_graphs.RUNNER_MODULE)
    with mrv2_graphs.graph_manager_scope(
            SimpleNamespace(cudagraph_mode=CUDAGraphMode.FULL_AND_PIECEWISE)):
        assert runner.ModelCudaGraphManager is ACLGraphManager
        assert issubclass(ACLGraphManager, ModelCudaGraphManager)
    assert runner.ModelCudaGraphManager is ModelCudaGraphManager
