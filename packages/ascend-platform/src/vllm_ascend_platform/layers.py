"""Finding sibling layers by name: the platform never imports them at module level.

docs/architecture.md, "Layers": the platform names the other layers only by qualified-name
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


#: env switch for the FULL-graph attention parameter update (default on; 0 = negative control)
PARAM_UPDATE_ENV = "VLLM_ASCEND_GRAPH_PARAM_UPDATE"
#: the graph layer's registration function for pre-replay hooks
GRAPH_PARAM_HOOK_REGISTRAR = "vllm_ascend_graph.params.register_param_update_hook"
GRAPH_PARAM_HOOK_UNREGISTRAR = "vllm_ascend_graph.params.unregister_param_update_hook"


def connect_graph_param_updates() -> bool:
    """Register the attention layer's graph parameter-update hook with the graph layer.

    Both are named by strings only: the attention layer publishes the hook's qualified name
    as ``vllm_ascend_attention.GRAPH_PARAM_UPDATE_HOOK``; the graph layer runs registered
    hooks before every FULL replay. Runs in every process (the general plugin calls it after
    the layers' register hooks). ``VLLM_ASCEND_GRAPH_PARAM_UPDATE=0`` leaves it unregistered
    (and removes it when an earlier call registered it: calling again applies the variable's
    current value), so captured graphs replay their capture-time attention lengths (a negative
    control).

    Returns:
        True when the hook was registered.

    Raises:
        ValueError: ``VLLM_ASCEND_GRAPH_PARAM_UPDATE`` is not 0 or 1.
    """
    import os

    from vllm.utils.import_utils import resolve_obj_by_qualname

    value = os.environ.get(PARAM_UPDATE_ENV, "1").strip().lower()
    if value not in ("0", "1", "false", "true", "no", "yes", "off", "on", ""):
        raise ValueError(f"{PARAM_UPDATE_ENV}={value!r} must be 1 (default) or 0.")
    attention = import_optional("vllm_ascend_attention")
    if attention is None or import_optional("vllm_ascend_graph") is None:
        return False
    hook_name = getattr(attention, "GRAPH_PARAM_UPDATE_HOOK", None)
    if hook_name is None:
        return False
    hook = resolve_obj_by_qualname(hook_name)
    if value in ("0", "false", "no", "off"):  # also undo an earlier registration in this process
        resolve_obj_by_qualname(GRAPH_PARAM_HOOK_UNREGISTRAR)(hook)
        return False
    resolve_obj_by_qualname(GRAPH_PARAM_HOOK_REGISTRAR)(hook)
    return True
