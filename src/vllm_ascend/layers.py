# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The general plugin body: register every installed layer with vLLM, once per process.

vLLM runs ``vllm_ascend:register_layers`` (group ``vllm.general_plugins``) in every
process (API server, engine core, workers) and for every platform, so this does
nothing unless the current platform is ours (installing the plugin never changes
vLLM for other platforms). Otherwise, under one lock, it:

1. checks the installed layers against the meta-package's version ranges
   (layer-skew check) and runs the one vLLM version check over every installed
   layer (``vllm_ascend_platform.startup.version_check``), naming any mismatch;
2. calls each installed layer's ``register`` hook, in the order the layers'
   descriptions give (docs/architecture.md, "The layer contract"); a layer that
   publishes no hook, or whose hook cannot be imported, is an error naming it;
3. applies the patch registry once, and connects the attention layer's FULL-graph
   parameter-update hook to the graph layer (by published names, see
   ``vllm_ascend_platform.startup.layers.connect_graph_param_updates``);
4. tells the platform which layers were registered in this process, so
   ``startup_check`` can refuse a platform loaded without this plugin.
"""

from __future__ import annotations

import logging
import threading

logger = logging.getLogger("vllm.ascend")

_lock = threading.Lock()
_done = False


class LayerRegistrationError(RuntimeError):
    """An installed layer cannot be registered; the message says what to change."""


def _our_platform_is_current() -> bool:
    from vllm.platforms import current_platform

    return type(current_platform).__module__.startswith("vllm_ascend_platform")


def _register_layer(desc) -> None:
    """Resolve and call the ``register`` hook ``desc`` (a ``LayerDescription``) publishes."""
    from vllm_ascend_platform.startup import contract

    fix = f"reinstall it: pip install packages/ascend-{desc.name}"
    qualname = desc.provides.get("register")
    if qualname is None:
        raise LayerRegistrationError(
            f"layer {desc.distribution} {desc.version} publishes no 'register' hook in its "
            f"description; {fix}"
        )
    try:
        hook = contract.resolve(qualname)
    except (contract.ContractError, ImportError) as exc:
        raise LayerRegistrationError(
            f"layer {desc.distribution} {desc.version}: its register hook {qualname} cannot be "
            f"imported ({exc}); {fix}"
        ) from exc
    if not callable(hook):
        raise LayerRegistrationError(
            f"layer {desc.distribution} {desc.version}: {qualname} is not callable; {fix}"
        )
    hook()


def register_all_layers() -> dict[str, str]:
    """Register every installed layer when the Ascend platform is current (idempotent,
    thread-safe: one lock around the whole registration).

    Returns:
        Layer name -> version of every layer registered in this process (empty when the
        current platform is not ours).

    Raises:
        LayerRegistrationError: layer-skew mismatch, an unsupported vLLM, a malformed layer
            description, or a layer whose register hook cannot be imported.
    """
    global _done
    from vllm_ascend_platform.patches import registry as patches
    from vllm_ascend_platform.startup import contract, layers, plugin, version_check
    from vllm_ascend_platform.startup.log import log

    if not _our_platform_is_current():
        return {}
    with _lock:
        if _done:
            return dict(plugin.layers_registered() or {})
        problems = version_check.layer_skew_problems()
        try:
            installed = contract.installed_layers()
            version_problem = version_check.startup_problem()
        except (contract.ContractError, ValueError) as exc:
            raise LayerRegistrationError(str(exc)) from exc
        if version_problem:
            problems.append(version_problem)
        if problems:
            raise LayerRegistrationError(
                "vllm-ascend layer versions do not match:\n- " + "\n- ".join(problems))
        for desc in installed:
            _register_layer(desc)
        registered = {desc.name: desc.version for desc in installed}
        patches.apply_patches()
        layers.connect_graph_param_updates()  # attention's FULL-graph update hook -> graph layer
        from vllm_ascend_platform.worker import sleep_mode

        sleep_mode.register()  # the "ascend" SleepModeBackend with vLLM's factory
        plugin.mark_layers_registered(registered)
        _done = True
    missing = [s.layer.key for s in version_check.layer_statuses()
               if s.version is None and s.layer.key not in ("ops", "platform")]
    log(
        logging.INFO,
        "vllm-ascend: general plugin %r registered layers: %s%s", plugin.LAYERS_ENTRY,
        ", ".join(f"{k} {v}" for k, v in registered.items()) or "none",
        f" (not installed: {', '.join(missing)})" if missing else "",
    )
    return registered
