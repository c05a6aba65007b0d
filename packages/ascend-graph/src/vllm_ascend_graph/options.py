"""The graph layer's options: ``additional_config["ascend_compilation_config"]``.

The platform parses and validates ``additional_config`` into its typed
``AscendConfig`` (``vllm_ascend_platform.config``); this layer reads the
``ascend_compilation_config`` section *by attribute* and never imports the platform
statically (layer rule: graph imports vllm and ascend_ops only). When the platform
layer is not installed (this package's own tests), the same keys are read from the
raw ``additional_config`` dict with the same defaults, and unknown keys raise.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

#: Most ACL graphs one process may capture. Source: vllm-ascend's
#: ``update_aclgraph_sizes`` (``MAX_CAPTURE_SIZE = 1800``): each captured graph holds
#: a device stream, a process has 2048, and 248 are kept as headroom.
DEFAULT_GRAPH_BUDGET = 1800

_PLATFORM_CONFIG = "vllm_ascend_platform.config"


@dataclasses.dataclass(frozen=True)
class GraphOptions:
    """Switches of the Ascend compile backend (all fusion passes on by default).

    Attributes:
        fuse_add_rms_norm: residual add + RMSNorm -> ``ascend.add_rms_norm``.
        fuse_swiglu: SiLU(gate) * up -> ``ascend.swiglu``.
        fuse_qk_norm_rope: per-head q/k RMSNorm + rope -> one op (pattern absent
            in SmolLM2/Llama graphs; accepted for Qwen3-style models).
        fuse_rope_kv_cache: rope + KV-cache write -> one op (accepted; no fused op yet).
        graph_budget: most ACL graphs to capture (pieces x sizes); ``None`` means
            :data:`DEFAULT_GRAPH_BUDGET`.
    """

    fuse_add_rms_norm: bool = True
    fuse_swiglu: bool = True
    fuse_qk_norm_rope: bool = True
    fuse_rope_kv_cache: bool = True
    graph_budget: int | None = None

    @property
    def effective_graph_budget(self) -> int:
        return DEFAULT_GRAPH_BUDGET if self.graph_budget is None else self.graph_budget


def _from_typed(section: Any) -> GraphOptions:
    return GraphOptions(**{f.name: getattr(section, f.name) for f in dataclasses.fields(GraphOptions)})


def _from_dict(additional: Any) -> GraphOptions:
    section = (additional or {}).get("ascend_compilation_config", {}) or {}
    if not isinstance(section, dict):
        raise TypeError(
            "additional_config['ascend_compilation_config'] must be a JSON object, "
            f"got {type(section).__name__}."
        )
    names = {f.name for f in dataclasses.fields(GraphOptions)}
    unknown = sorted(set(section) - names)
    if unknown:
        raise ValueError(
            f"additional_config['ascend_compilation_config']: unknown key(s) {unknown}; "
            f"valid keys: {sorted(names)}."
        )
    return GraphOptions(**section)


def graph_options(vllm_config: Any) -> GraphOptions:
    """Read the options for ``vllm_config``.

    Uses the platform's typed ``AscendConfig`` when the platform layer is installed
    (``get_ascend_config().ascend_compilation_config``), else the raw dict.

    Raises:
        ValueError / TypeError: (raw-dict path) unknown key or non-object section.
        ValueError: ``graph_budget`` < 1.
    """
    try:
        platform_config = importlib.import_module(_PLATFORM_CONFIG)
    except ImportError:
        opts = _from_dict(getattr(vllm_config, "additional_config", None))
    else:
        try:
            ascend = platform_config.get_ascend_config()
        except RuntimeError:
            ascend = platform_config.init_ascend_config(vllm_config)
        opts = _from_typed(ascend.ascend_compilation_config)
    if opts.graph_budget is not None and opts.graph_budget < 1:
        raise ValueError(
            "additional_config['ascend_compilation_config']['graph_budget'] must be >= 1 "
            f"(got {opts.graph_budget}); omit it for the default of {DEFAULT_GRAPH_BUDGET}."
        )
    return opts
