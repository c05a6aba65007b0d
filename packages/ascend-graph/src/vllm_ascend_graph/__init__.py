"""ACL graph capture and the Ascend compile backend for vLLM.

Public surface (the platform names these by qualified-name strings only):

* :func:`configure` -- called from ``NPUPlatform.check_and_update_config``; owns the
  compilation mode, ``cudagraph_mode``, capture sizes, compile backend and passes.
* :func:`register` -- idempotent layer hook (vLLM version check).
* :data:`WRAPPER_CLS`, :data:`COMPILER_CLS`, :data:`PASS_MANAGER_CLS` -- what the
  platform returns from ``get_static_graph_wrapper_cls``, ``get_compile_backend`` and
  ``get_pass_manager_cls``.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

#: ``Platform.get_static_graph_wrapper_cls()``
WRAPPER_CLS = "vllm_ascend_graph.wrapper.ACLGraphWrapper"
#: ``Platform.get_compile_backend()`` (a vLLM ``CompilerInterface``)
COMPILER_CLS = "vllm_ascend_graph.compiler.AscendCompiler"
#: ``Platform.get_pass_manager_cls()``
PASS_MANAGER_CLS = "vllm_ascend_graph.pass_manager.AscendPassManager"

_registered = False


def register() -> None:
    """Check the vLLM version once per process (idempotent).

    Raises:
        RuntimeError: when the installed vLLM is not 0.32.x.
    """
    global _registered
    if _registered:
        return
    from vllm_ascend_graph._compat import check_vllm_version

    check_vllm_version()
    _registered = True


def configure(vllm_config: Any) -> None:
    """Set graph/compile settings on ``vllm_config`` (see :mod:`vllm_ascend_graph.execution_mode`)."""
    from vllm_ascend_graph.execution_mode import configure_execution_mode

    configure_execution_mode(vllm_config)


__all__ = ["COMPILER_CLS", "PASS_MANAGER_CLS", "WRAPPER_CLS", "configure", "register"]
