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

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

#: Most ACL graphs one process may capture. Source: vllm-ascend's
#: ``update_aclgraph_sizes`` (``MAX_CAPTURE_SIZE = 1800``): each captured graph holds
#: a device stream, a process has 2048, and 248 are kept as headroom.
DEFAULT_GRAPH_BUDGET = 1800

#: the ``additional_config`` key of this section
SECTION = "ascend_compilation_config"

#: Fusion switches other Ascend plugins accept that this layer has no pass for, refused by name
#: rather than accepted and ignored.
UNBUILT_FUSIONS = {
    "fuse_qk_norm_rope": "ascend_ops has no fused per-head q/k RMSNorm + rope op to rewrite to",
    "fuse_rope_kv_cache": "the KV-cache write runs inside vLLM's attention splitting op, outside "
                          "every compiled piece, so no graph holds rope and the write together",
}


class GraphOptions(BaseModel):
    """Switches of the Ascend compile backend (all fusion passes on by default).

    Strict JSON types (``"true"`` is not a bool, ``"8"`` is not an int), unknown keys refused.

    Attributes:
        fuse_add_rms_norm: residual add + RMSNorm -> ``ascend.add_rms_norm``.
        fuse_swiglu: SiLU(gate) * up -> ``ascend.swiglu``.
        graph_budget: most ACL graphs to capture (pieces x sizes), at least 1; ``None`` means
            :data:`DEFAULT_GRAPH_BUDGET`.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)
    #: keys refused by name with the reason (the platform's config check reads this too)
    REFUSED_KEYS: ClassVar[dict[str, str]] = UNBUILT_FUSIONS

    fuse_add_rms_norm: bool = True
    fuse_swiglu: bool = True
    graph_budget: int | None = None

    @model_validator(mode="before")
    @classmethod
    def _refuse_unbuilt_fusions(cls, data: Any) -> Any:
        if isinstance(data, dict):
            asked = [key for key in cls.REFUSED_KEYS if key in data]
            if asked:
                reasons = "; ".join(f"{key}: {cls.REFUSED_KEYS[key]}" for key in asked)
                raise ValueError(f"not built on Ascend yet, remove it from {SECTION}: {reasons}")
        return data

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
