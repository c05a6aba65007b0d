"""Finding sibling layers by name: the platform never imports them at module level.

DESIGN.md section 2: the platform names the other layers only by qualified-name
strings, and a missing layer is a clear start-up error naming the extra to install.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

#: import name -> (distribution, meta-package extra)
LAYERS: dict[str, tuple[str, str]] = {
    "vllm_ascend_attention": ("vllm-ascend-attention", "attention"),
    "vllm_ascend_comm": ("vllm-ascend-comm", "comm"),
    "vllm_ascend_graph": ("vllm-ascend-graph", "graph"),
    "vllm_ascend_models": ("vllm-ascend-models", "models"),
}


class MissingLayerError(RuntimeError):
    """A layer the platform needs is not installed."""


def require_layer(module: str, purpose: str) -> ModuleType:
    """Import the layer ``module`` or raise naming the extra that installs it.

    Raises:
        MissingLayerError: when the layer is not installed.
    """
    if importlib.util.find_spec(module) is None:
        dist, extra = LAYERS.get(module, (module, "all"))
        raise MissingLayerError(
            f"The Ascend platform needs the {purpose} layer ({dist}), which is not installed. "
            f"Install it from the checkout: pip install './[{extra}]' (or './[all]') "
            f"together with packages/ascend-{extra}."
        )
    return importlib.import_module(module)


def import_optional(module: str) -> ModuleType | None:
    """Import ``module`` if its top-level package is installed, else return None.

    Errors raised *inside* an installed module propagate (never swallowed).
    """
    top = module.split(".", 1)[0]
    if importlib.util.find_spec(top) is None:
        return None
    return importlib.import_module(module)
