# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Which graph manager Model Runner V2 builds (``vllm_ascend_platform.worker.mrv2_graphs``,
patch ``mrv2-graph-manager``): the graph layer's ACLGraphManager with a graph mode on, vLLM's
with NONE; the name is restored after the scope (also after an error); drift is refused.

End to end: ``tests/e2e/test_graph_*.py`` and ``test_simulated_npu_smollm2.py``."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
from types import SimpleNamespace

import pytest
from vllm.config import CUDAGraphMode
from vllm.v1.worker.gpu.cudagraph_utils import ModelCudaGraphManager
from vllm_ascend_platform.worker import mrv2_graphs

runner = importlib.import_module(mrv2_graphs.RUNNER_MODULE)


def test_the_runner_builds_its_manager_by_the_patched_name():
    assert runner.ModelCudaGraphManager is ModelCudaGraphManager
    assert mrv2_graphs.is_vllm_graph_manager(runner.ModelCudaGraphManager)


class _StandInManager(ModelCudaGraphManager):
    """What the graph layer's role resolves to, in a session without that layer installed."""


@pytest.fixture
def stand_in_role(monkeypatch):
    from vllm_ascend_platform.startup import contract

    seen = []

    def resolve(role, purpose):
        seen.append(role)
        return _StandInManager

    monkeypatch.setattr(contract, "resolve_role", resolve)
    return seen


def test_graph_mode_scope_builds_the_resolved_manager(stand_in_role):
    # the graph layer's own class in that place: tests/e2e/test_mrv2_graph_wiring.py
    with mrv2_graphs.graph_manager_scope(
            SimpleNamespace(cudagraph_mode=CUDAGraphMode.FULL_AND_PIECEWISE)):
        assert runner.ModelCudaGraphManager is _StandInManager
    assert runner.ModelCudaGraphManager is ModelCudaGraphManager
    assert "mrv2_graph_manager" in stand_in_role


@pytest.mark.skipif(importlib.util.find_spec("vllm_ascend_graph") is not None,
                    reason="the graph layer is installed here")
def test_graph_mode_without_the_graph_layer_names_the_missing_role():
    from vllm_ascend_platform.startup.contract import MissingLayerError

    with pytest.raises(MissingLayerError, match="mrv2_graph_manager"):
        with mrv2_graphs.graph_manager_class():
            pass
    assert runner.ModelCudaGraphManager is ModelCudaGraphManager


@pytest.mark.parametrize("mode", [CUDAGraphMode.NONE, None])
def test_eager_keeps_vllms_manager(mode):
    scope = mrv2_graphs.graph_manager_scope(SimpleNamespace(cudagraph_mode=mode))
    assert isinstance(scope, contextlib.nullcontext)


def test_name_restored_after_an_error(stand_in_role):
    with pytest.raises(ValueError, match="boom"):
        with mrv2_graphs.graph_manager_class():
            raise ValueError("boom")
    assert runner.ModelCudaGraphManager is ModelCudaGraphManager


def test_drift_check_refuses_a_foreign_class():
    assert not mrv2_graphs.is_vllm_graph_manager(object)
    assert not mrv2_graphs.is_vllm_graph_manager(lambda *a: None)
