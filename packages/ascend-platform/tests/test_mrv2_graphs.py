# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Which graph manager Model Runner V2 builds (``vllm_ascend_platform.worker.mrv2_graphs``,
patch ``mrv2-graph-manager``): the graph layer's ACLGraphManager with a graph mode on, vLLM's
with NONE; the name is restored after the scope (also after an error); drift is refused.

End to end: ``tests/e2e/test_graph_*.py`` and ``test_simulated_npu_smollm2.py``."""

from __future__ import annotations

import contextlib
import importlib
from types import SimpleNamespace

import pytest
from vllm.config import CUDAGraphMode
from vllm.v1.worker.gpu.cudagraph_utils import ModelCudaGraphManager
from vllm_ascend_platform.worker import mrv2_graphs

runner = importlib.import_module(mrv2_graphs.RUNNER_MODULE)


def test_the_runner_builds_its_manager_by_the_patched_name():
    assert runner.ModelCudaGraphManager is ModelCudaGraphManager
    assert mrv2_graphs.is_vllm_graph_manager(runner.ModelCudaGraphManager)


def test_graph_mode_scope_builds_the_graph_layers_manager():
    from vllm_ascend_graph.mrv2_manager import ACLGraphManager

    with mrv2_graphs.graph_manager_scope(
            SimpleNamespace(cudagraph_mode=CUDAGraphMode.FULL_AND_PIECEWISE)):
        assert runner.ModelCudaGraphManager is ACLGraphManager
        assert issubclass(ACLGraphManager, ModelCudaGraphManager)
    assert runner.ModelCudaGraphManager is ModelCudaGraphManager


@pytest.mark.parametrize("mode", [CUDAGraphMode.NONE, None])
def test_eager_keeps_vllms_manager(mode):
    scope = mrv2_graphs.graph_manager_scope(SimpleNamespace(cudagraph_mode=mode))
    assert isinstance(scope, contextlib.nullcontext)


def test_name_restored_after_an_error():
    with pytest.raises(ValueError, match="boom"):
        with mrv2_graphs.graph_manager_class():
            raise ValueError("boom")
    assert runner.ModelCudaGraphManager is ModelCudaGraphManager


def test_drift_check_refuses_a_foreign_class():
    assert not mrv2_graphs.is_vllm_graph_manager(object)
    assert not mrv2_graphs.is_vllm_graph_manager(lambda *a: None)
