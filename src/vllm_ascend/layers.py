"""The general plugin body: register every installed layer with vLLM, once per process.

vLLM runs ``vllm_ascend:register_layers`` (group ``vllm.general_plugins``) in every
process (API server, engine core, workers) and for every platform, so this does
nothing unless the current platform is ours (installing the plugin never changes
vLLM for other platforms). Otherwise it:

1. checks the installed layers against the meta-package's version ranges
   (layer-skew check) and names any mismatch;
2. calls each installed layer's register hook (attention, models, comm, graph);
   an installed layer without its hook is an error, never skipped silently;
3. applies the patch registry once, and connects the attention layer's FULL-graph
   parameter-update hook to the graph layer (by qualified names, see
   ``vllm_ascend_platform.layers.connect_graph_param_updates``);
4. tells the platform which layers were registered in this process, so
   ``startup_check`` can refuse a platform loaded without this plugin.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging

logger = logging.getLogger("vllm.ascend")

_done = False


class LayerRegistrationError(RuntimeError):
    """An installed layer cannot be registered; the message says what to change."""


def _our_platform_is_current() -> bool:
    from vllm.platforms import current_platform

    return type(current_platform).__module__.startswith("vllm_ascend_platform")


def _register_layer(layer) -> str | None:
    """Call ``layer``'s register hook; return its version, or None when not installed."""
    try:
        version = importlib.metadata.version(layer.dist)
    except importlib.metadata.PackageNotFoundError:
        return None
    module_name, _, func_name = layer.register.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise LayerRegistrationError(
            f"layer {layer.dist} {version} is installed but {module_name} cannot be imported "
            f"({exc}); reinstall it: pip install packages/{layer.folder}"
        ) from exc
    hook = getattr(module, func_name, None)
    if not callable(hook):
        raise LayerRegistrationError(
            f"layer {layer.dist} {version} is installed but has no {layer.register}() hook; "
            f"install a version matching vllm-ascend: pip install packages/{layer.folder}"
        )
    hook()
    return version


def register_all_layers() -> dict[str, str]:
    """Register every installed layer when the Ascend platform is current (idempotent).

    Returns:
        Layer key -> version of every layer registered in this process (empty when the
        current platform is not ours).

    Raises:
        LayerRegistrationError: layer-skew mismatch, or an installed layer that cannot
            be imported or has no register hook.
    """
    global _done
    from vllm_ascend_platform import layers, patches, plugin, version_check

    if not _our_platform_is_current():
        return {}
    if _done:
        return dict(plugin.layers_registered() or {})
    skew = version_check.layer_skew_problems()
    if skew:
        raise LayerRegistrationError("vllm-ascend layer versions do not match:\n- " + "\n- ".join(skew))
    registered: dict[str, str] = {}
    for layer in version_check.LAYERS:
        if layer.register is None:
            continue
        version = _register_layer(layer)
        if version is not None:
            registered[layer.key] = version
    patches.apply_patches()
    layers.connect_graph_param_updates()  # attention's FULL-graph update hook -> graph layer
    from vllm_ascend_platform import sleep_mode

    sleep_mode.register()  # the "ascend" SleepModeBackend with vLLM's factory
    plugin.mark_layers_registered(registered)
    _done = True
    missing = [layer.key for layer in version_check.LAYERS if layer.register and layer.key not in registered]
    plugin.log(
        logging.INFO,
        "vllm-ascend: general plugin %r registered layers: %s%s", plugin.LAYERS_ENTRY,
        ", ".join(f"{k} {v}" for k, v in registered.items()) or "none",
        f" (not installed: {', '.join(missing)})" if missing else "",
    )
    return registered
