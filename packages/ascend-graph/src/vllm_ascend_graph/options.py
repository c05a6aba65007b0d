# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The graph layer's options: the ``additional_config["ascend_compilation_config"]`` section.

:class:`GraphOptions` is the one definition of this section. The layer publishes it in its
description (``vllm_ascend_graph.LAYER["options"]``); the platform builds its ``AscendConfig``
from the installed layers' sections, validates ``additional_config`` once at start-up and hands
this layer its typed section through :func:`vllm_ascend_graph.configure`
(docs/architecture.md, "The layer contract"). Code that runs later in other processes (the
compile backend and pass manager in the workers) reads the section from the ``VllmConfig`` it
is handed with the same model, so it sees exactly what the platform validated; this layer never
imports the platform.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

#: Most ACL graphs one process may capture. Source: vllm-ascend's
#: ``update_aclgraph_sizes`` (``MAX_CAPTURE_SIZE = 1800``): each captured graph holds
#: a device stream, a process has 2048, and 248 are kept as headroom.
DEFAULT_GRAPH_BUDGET = 1800

#: the ``additional_config`` key of this section
SECTION = "ascend_compilation_config"


class GraphOptions(BaseModel):
    """Switches of the Ascend compile backend (all fusion passes on by default).

    Strict JSON types (``"true"`` is not a bool, ``"8"`` is not an int), unknown keys refused.

    Attributes:
        fuse_add_rms_norm: residual add + RMSNorm -> ``ascend.add_rms_norm``.
        fuse_swiglu: SiLU(gate) * up -> ``ascend.swiglu``.
        fuse_qk_norm_rope: per-head q/k RMSNorm + rope -> one op (pattern absent
            in SmolLM2/Llama graphs; accepted for Qwen3-style models).
        fuse_rope_kv_cache: rope + KV-cache write -> one op (accepted; no fused op yet).
        graph_budget: most ACL graphs to capture (pieces x sizes), at least 1; ``None`` means
            :data:`DEFAULT_GRAPH_BUDGET`.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    fuse_add_rms_norm: bool = True
    fuse_swiglu: bool = True
    fuse_qk_norm_rope: bool = True
    fuse_rope_kv_cache: bool = True
    graph_budget: int | None = None

    @field_validator("graph_budget")
    @classmethod
    def _positive_budget(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError(
                f"must be >= 1 (got {value}); omit it for the default of {DEFAULT_GRAPH_BUDGET}"
            )
        return value

    @property
    def effective_graph_budget(self) -> int:
        return DEFAULT_GRAPH_BUDGET if self.graph_budget is None else self.graph_budget


def graph_options(vllm_config: Any) -> GraphOptions:
    """This layer's section of ``vllm_config.additional_config``, typed (defaults when absent).

    Raises:
        pydantic.ValidationError: (a ``ValueError``) unknown key, wrong type or ``graph_budget``
            below 1; the platform reports these at start-up, naming the key.
    """
    additional = getattr(vllm_config, "additional_config", None) or {}
    return GraphOptions.model_validate(additional.get(SECTION) or {})
