# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Graph modes on vLLM 0.34's Model Runner V2: which graph manager the runner builds.

``GPUModelRunner.initialize_kv_cache`` (``vllm/v1/worker/gpu/model_runner.py``) builds its
``ModelCudaGraphManager`` (``vllm/v1/worker/gpu/cudagraph_utils.py``: ``torch.cuda.CUDAGraph``
capture, replay without attention-parameter updates) by the name it imported into its module.
For the duration of that call, with a graph mode configured, :func:`graph_manager_scope` makes
the name resolve to the class the graph layer publishes as ``mrv2_graph_manager``
(``vllm_ascend_graph.mrv2_manager.ACLGraphManager``: ACL graphs, attention parameters updated
before each FULL replay), so the manager is built with vLLM's own constructor arguments. vllm-ascend
substitutes the same name the same way (``graph_manager_wrapper``,
``vllm_ascend/worker/v2/model_runner.py``). With ``cudagraph_mode`` NONE nothing changes.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

#: the module whose global name the runner builds its graph manager by
RUNNER_MODULE = "vllm.v1.worker.gpu.model_runner"
MANAGER_NAME = "ModelCudaGraphManager"
#: the modules whose global name the autoregressive speculators (EAGLE, EAGLE-3, MTP) build
#: their draft graph managers by (``init_cudagraph_manager``: prefill, then decode)
SPECULATOR_MODULES = ("vllm.v1.worker.gpu.spec_decode.target_dependent_ar.speculator",
                      "vllm.v1.worker.gpu.spec_decode.autoregressive.speculator")
SPECULATOR_MANAGER_NAME = "SpeculatorCudaGraphManager"


def graph_manager_scope(compilation_config: Any) -> contextlib.AbstractContextManager[Any]:
    """The scope to run ``initialize_kv_cache`` in: the ``mrv2-graph-manager`` patch when a graph
    mode is configured, else nothing."""
    from vllm.config import CUDAGraphMode

    mode = getattr(compilation_config, "cudagraph_mode", None)
    if mode is None or mode == CUDAGraphMode.NONE:
        return contextlib.nullcontext()
    return _graph_manager_patches()


@contextlib.contextmanager
def _graph_manager_patches() -> Iterator[None]:
    """The target's manager (``mrv2-graph-manager``) and, since the speculator builds its draft
    managers inside ``initialize_kv_cache`` too, the draft's (``mrv2-speculator-graph-manager``)."""
    from vllm_ascend_platform.patches.registry import patched

    with patched("mrv2-graph-manager"), patched("mrv2-speculator-graph-manager"):
        yield


def is_vllm_graph_manager(obj: Any) -> bool:
    """Drift check: the runner module's name still holds vLLM's ``ModelCudaGraphManager``
    (or our subclass of it, while a scope is entered)."""
    from vllm.v1.worker.gpu.cudagraph_utils import ModelCudaGraphManager

    return isinstance(obj, type) and issubclass(obj, ModelCudaGraphManager)


# patch: mrv2-graph-manager (declared in vllm_ascend_platform.patches.declarations; docs/model-runner-v2.md)
@contextlib.contextmanager
def graph_manager_class() -> Iterator[None]:
    """Within the block, ``GPUModelRunner`` builds the graph layer's ``mrv2_graph_manager``.

    Raises:
        MissingLayerError: the graph layer (``vllm-ascend-graph``) is not installed.
    """
    from vllm_ascend_platform.startup import contract

    cls = contract.resolve_role("mrv2_graph_manager", "graph modes on vLLM 0.34 (cudagraph_mode)")
    runner: Any = importlib.import_module(RUNNER_MODULE)
    saved = getattr(runner, MANAGER_NAME)
    setattr(runner, MANAGER_NAME, cls)
    try:
        yield
    finally:
        setattr(runner, MANAGER_NAME, saved)


def is_vllm_speculator_graph_manager(obj: Any) -> bool:
    """Drift check: each speculator module's name still holds vLLM's
    ``SpeculatorCudaGraphManager`` (or our subclass of it, while a scope is entered)."""
    from vllm.v1.worker.gpu.spec_decode.autoregressive.cudagraph_utils import (
        SpeculatorCudaGraphManager,
    )

    del obj  # the declared target is the first module's; check both
    for module in SPECULATOR_MODULES:
        held = getattr(importlib.import_module(module), SPECULATOR_MANAGER_NAME, None)
        if not (isinstance(held, type) and issubclass(held, SpeculatorCudaGraphManager)):
            return False
    return True


# patch: mrv2-speculator-graph-manager (declared in vllm_ascend_platform.patches.declarations;
# docs/model-runner-v2.md)
@contextlib.contextmanager
def speculator_graph_manager_class() -> Iterator[None]:
    """Within the block, vLLM's autoregressive speculators build the graph layer's
    ``mrv2_speculator_graph_manager`` for their draft prefill and decode graphs (vllm-ascend
    replaces the same name with its ``EagleAclGraphManager``).

    Raises:
        MissingLayerError: the graph layer (``vllm-ascend-graph``) is not installed.
    """
    from vllm_ascend_platform.startup import contract

    cls = contract.resolve_role("mrv2_speculator_graph_manager",
                                "draft-model graphs on vLLM 0.34 (speculative decoding)")
    modules: list[Any] = [importlib.import_module(m) for m in SPECULATOR_MODULES]
    saved = [getattr(m, SPECULATOR_MANAGER_NAME) for m in modules]
    for m in modules:
        setattr(m, SPECULATOR_MANAGER_NAME, cls)
    try:
        yield
    finally:
        for m, held in zip(modules, saved, strict=True):
            setattr(m, SPECULATOR_MANAGER_NAME, held)
