# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""ACL graph capture and the Ascend compile backend for vLLM.

Public surface (the platform names these by qualified-name strings only):

* :data:`LAYER` -- the layer's description (docs/architecture.md, "The layer contract").
* :func:`configure` -- called from ``NPUPlatform.check_and_update_config`` with the typed
  ``ascend_compilation_config`` section; owns the compilation mode, ``cudagraph_mode``, capture
  sizes, compile backend and passes.
* :func:`register` -- idempotent layer hook.
* :data:`WRAPPER_CLS`, :data:`COMPILER_CLS`, :data:`PASS_MANAGER_CLS` -- what the
  platform returns from ``get_static_graph_wrapper_cls``, ``get_compile_backend`` and
  ``get_pass_manager_cls``.
"""

from __future__ import annotations

from typing import Any

from vllm_ascend_graph.names import COMPILER_CLS, PASS_MANAGER_CLS, WRAPPER_CLS

__version__ = "0.2.0"


#: This layer's description (docs/architecture.md, "The layer contract"); read only by the
#: platform, through the entry point ``vllm_ascend.layers: graph``.
LAYER: dict = {
    "name": "graph",
    "distribution": "vllm-ascend-graph",
    "version": __version__,
    "vllm": ">=0.34,<0.35",
    "provides": {
        "register": "vllm_ascend_graph.register",
        "configure": "vllm_ascend_graph.configure",
        "static_graph_wrapper": WRAPPER_CLS,
        "compile_backend": COMPILER_CLS,
        "pass_manager": PASS_MANAGER_CLS,
        "graph_param_hook_register": "vllm_ascend_graph.params.register_param_update_hook",
        "graph_param_hook_unregister": "vllm_ascend_graph.params.unregister_param_update_hook",
        "mrv2_graph_manager": "vllm_ascend_graph.mrv2_manager.ACLGraphManager",
        "mrv2_speculator_graph_manager":
            "vllm_ascend_graph.mrv2_spec_manager.SpeculatorACLGraphManager",
    },
    "options": {
        "section": "ascend_compilation_config",
        "model": "vllm_ascend_graph.options.GraphOptions",
    },
}

_registered = False


def register() -> None:
    """The graph layer's register hook: nothing to add to vLLM's registries (its classes are
    named through the platform's hooks); idempotent. Called by the platform's layer
    registration, which has checked the vLLM version."""
    global _registered
    _registered = True


def configure(vllm_config: Any, options: Any = None) -> None:
    """Set graph/compile settings on ``vllm_config`` (see :mod:`vllm_ascend_graph.execution_mode`).

    Args:
        vllm_config: vLLM's ``VllmConfig``, after the platform made it eager where asked.
        options: this layer's typed section (:class:`~vllm_ascend_graph.options.GraphOptions`)
            as the platform validated it; None reads it from ``vllm_config``.
    """
    from vllm_ascend_graph.execution_mode import configure_execution_mode

    configure_execution_mode(vllm_config, options)


__all__ = ["COMPILER_CLS", "LAYER", "PASS_MANAGER_CLS", "WRAPPER_CLS", "configure", "register"]
