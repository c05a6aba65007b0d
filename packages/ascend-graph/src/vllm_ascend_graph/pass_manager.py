# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``AscendPassManager``: the FX passes the Ascend compile backend runs on each piece.

vLLM builds it from ``Platform.get_pass_manager_cls()``, calls ``configure(vllm_config)``
and stores it in the compiler config under ``Platform.pass_key``
(``VllmBackend.configure_post_pass``); :class:`AscendCompiler` calls it on the graph.
Which passes run comes from ``additional_config["ascend_compilation_config"]``
(:class:`vllm_ascend_graph.options.GraphOptions`), each on by default.
"""

from __future__ import annotations

import os
from typing import Any

import torch.fx as fx
from vllm.logger import init_logger

from vllm_ascend_graph.passes._fx import may_mutate

logger = init_logger("vllm.ascend.graph")


class AscendPassManager:
    """Ordered FX passes; each pass is ``callable(fx.Graph) -> int`` (rewrites made)."""

    def __init__(self) -> None:
        self.passes: list[Any] = []
        self.match_counts: dict[str, int] = {}

    def configure(self, vllm_config: Any) -> None:
        """Select the passes switched on in ``vllm_config``'s Ascend options."""
        from vllm_ascend_graph.options import graph_options
        from vllm_ascend_graph.passes import build_passes

        self.options = graph_options(vllm_config)
        self.passes = build_passes(self.options)

    def add(self, pass_: Any) -> None:
        """Append a custom pass (vLLM's ``post_grad_custom_post_pass`` hook)."""
        self.passes.append(pass_)

    def uuid(self) -> str:
        return ",".join(type(p).__name__ for p in self.passes)

    def __call__(self, graph: fx.Graph) -> None:
        dump = os.environ.get("VLLM_ASCEND_GRAPH_DUMP")
        if dump:
            with open(dump, "a") as f:
                f.write("==== before passes ====\n" + str(graph) + "\n")
        for pass_ in self.passes:
            n = pass_(graph)
            name = getattr(pass_, "name", type(pass_).__name__)
            self.match_counts[name] = self.match_counts.get(name, 0) + int(n or 0)
        # drop what the passes orphaned, never an in-place write whose result goes unused
        graph.eliminate_dead_code(is_impure_node=may_mutate)
        graph.lint()
        if dump:
            with open(dump, "a") as f:
                f.write("==== after passes ====\n" + str(graph) + "\n")
