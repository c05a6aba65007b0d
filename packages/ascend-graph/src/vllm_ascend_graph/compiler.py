# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``AscendCompiler``: vLLM ``CompilerInterface`` for Ascend (no inductor).

vLLM's ``VllmBackend`` splits the Dynamo graph at attention (piecewise) and hands each
piece to ``make_compiler(...)``; for a backend string other than ``"eager"`` or
``"inductor"`` it instantiates ``current_platform.get_compile_backend()`` -- this class
(``vllm/compilation/backends.py``, ``make_compiler``). ``compile`` receives the
inductor-style config dict in which vLLM stored the platform's pass manager under
``current_platform.pass_key`` (``VllmBackend.configure_post_pass``); we run that pass
manager (our FX fusion passes) on the piece and return the rewritten
``fx.GraphModule`` to be executed as Python -- on an NPU each fused op is one
``torch_npu`` launch, and the whole piece is then captured by ``ACLGraphWrapper``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch.fx as fx
from vllm.compilation.compiler_interface import CompilerInterface
from vllm.compilation.counter import compilation_counter
from vllm.logger import init_logger

logger = init_logger("vllm.ascend.graph")


class AscendCompiler(CompilerInterface):
    """Runs the Ascend pass manager on each graph piece; no code generation."""

    name = "ascend"

    def compile_factors(self, vllm_config: Any) -> dict[str, object]:
        """This backend's part of vLLM's compilation cache key (vLLM 0.34:
        ``CompilerInterface.compile_factors``, ``vllm/compilation/compiler_interface.py``):
        ``{"ascend": <this layer's options section as a JSON-able dict>}``."""
        from vllm_ascend_graph.options import graph_options

        return {"ascend": graph_options(vllm_config).model_dump(mode="json")}

    def compile(
        self,
        graph: fx.GraphModule,
        example_inputs: list[Any],
        compiler_config: dict[str, Any],
        compile_range: Any,
        key: str | None = None,
    ) -> tuple[Callable[..., Any] | None, Any | None]:
        """Rewrite ``graph`` in place with the configured passes; return it (no cache handle)."""
        from vllm.platforms import current_platform

        from vllm_ascend_graph.pass_manager import AscendPassManager

        manager = compiler_config.get(current_platform.pass_key)
        if isinstance(manager, AscendPassManager):
            manager(graph.graph)
            graph.recompile()
        elif manager is not None:
            raise TypeError(
                f"compiler_config[{current_platform.pass_key!r}] holds {type(manager).__name__}; "
                "the Ascend backend needs the platform's get_pass_manager_cls() to return "
                "'vllm_ascend_graph.pass_manager.AscendPassManager'."
            )
        compilation_counter.num_eager_compiles += 1
        return graph, None
