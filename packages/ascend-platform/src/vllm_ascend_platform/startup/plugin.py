# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The platform plugin's decision and the start-up check.

vLLM calls the meta-package's ``vllm_ascend:register`` (group
``vllm.platform_plugins``) twice per process; it forwards to
:func:`platform_plugin`, which decides cheaply whether Ascend is wanted:

* wanted when ``VLLM_ASCEND_EMULATE=1`` (CPU emulation; torch_npu is never
  imported then), when ``VLLM_ASCEND_SIMULATE_NPU=1`` (the NPU code path over
  ``ascend_ops.simulator``, docs/simulated-npu.md; the two flags together are
  refused) or when ``torch_npu`` is importable (found with
  ``importlib.util.find_spec``);
* not wanted: return None after one visible log line saying why and how to
  enable emulation.

vLLM swallows exceptions raised in ``register()`` (logged at DEBUG only) and then
runs on its own CPU platform, so a wanted-but-broken start (unsupported vLLM,
torch_npu failing to load, no NPU visible, a bad ``VLLM_ASCEND_EMULATE``) exits
the process with one line naming the cause and the fix (``SystemExit`` is not an
``Exception``, so vLLM cannot swallow it). Problems that need the engine
configuration (unknown ``VLLM_PLUGINS`` entries, the layers' general plugin not
loaded, drifted patches, ``additional_config`` errors, refused features) are
raised by :func:`startup_check`, which ``NPUPlatform.check_and_update_config``
calls first.

No vLLM import at module level: ``vllm-ascend doctor`` imports this module in
environments without vLLM.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import os
from dataclasses import dataclass, field
from typing import Any

from vllm_ascend_platform.startup import version_check
from vllm_ascend_platform.startup.log import log

PLATFORM_QUALNAME = "vllm_ascend_platform.platform.NPUPlatform"
PLATFORM_GROUP = "vllm.platform_plugins"
GENERAL_GROUP = "vllm.general_plugins"
#: our entry-point names, as declared in the meta-package's pyproject.toml
PLATFORM_ENTRY, LAYERS_ENTRY = "ascend", "ascend_layers"


class AscendStartupError(RuntimeError):
    """The Ascend platform is active but cannot start; the message says what to change."""


@dataclass
class _State:
    decided: bool = False
    qualname: str | None = None
    mode: str | None = None  # "emulation" | "simulated-npu" | "npu" | None
    problems: list[str] = field(default_factory=list)
    layers_registered: dict[str, str] | None = None


_state = _State()


# --------------------------------------------------------------------------- plugin selection
@dataclass(frozen=True)
class PluginSelection:
    """What vLLM loads from its plugin groups given ``VLLM_PLUGINS`` (vllm/plugins/__init__.py).

    vLLM reads ``VLLM_PLUGINS`` as ``None`` when unset (load everything) or else as
    ``value.split(",")`` (an allowlist; the empty string loads nothing).
    """

    env: str | None
    discovered: dict[str, list[tuple[str, str]]]  # group -> [(name, "module:attr")]
    loaded: dict[str, list[str]]  # group -> names vLLM will load
    unknown: list[str]  # allowlisted names no discovered vllm.* entry point has

    def describe(self) -> str:
        """One line: the setting and what loads from our two groups."""
        env = "unset (all plugins load)" if self.env is None else repr(self.env)
        parts = [f"{g}: [{', '.join(self.loaded.get(g, []))}]" for g in (PLATFORM_GROUP, GENERAL_GROUP)]
        return f"VLLM_PLUGINS={env}; loading " + "; ".join(parts)


def plugin_selection(env: str | None = None, use_environ: bool = True) -> PluginSelection:
    """Compute :class:`PluginSelection` from ``env`` (default: the ``VLLM_PLUGINS`` variable)."""
    if use_environ and env is None:
        env = os.environ.get("VLLM_PLUGINS")
    allowed = None if env is None else env.split(",")
    all_eps = importlib.metadata.entry_points()
    discovered: dict[str, list[tuple[str, str]]] = {}
    for group in sorted(g for g in all_eps.groups if g.startswith("vllm.")):
        discovered[group] = sorted({(ep.name, ep.value) for ep in all_eps.select(group=group)})
    loaded = {
        group: [name for name, _ in eps if allowed is None or name in allowed]
        for group, eps in discovered.items()
    }
    known = {name for eps in discovered.values() for name, _ in eps}
    unknown = [] if allowed is None else [n for n in allowed if n and n not in known]
    return PluginSelection(env, discovered, loaded, unknown)


def _selection_problems(sel: PluginSelection) -> list[str]:
    problems = []
    for name in sel.unknown:
        listing = "; ".join(
            f"{group}: {', '.join(n for n, _ in eps)}" for group, eps in sel.discovered.items()
        )
        problems.append(
            f"VLLM_PLUGINS names {name!r}, which no installed package provides "
            f"(discovered entry points: {listing}); fix the spelling or remove it."
        )
    return problems


# --------------------------------------------------------------------------- the decision
def _fail(message: str) -> None:
    """Stop the process with one line (vLLM cannot swallow SystemExit)."""
    raise SystemExit(f"vllm-ascend: {message}")


def _npu_problem() -> str | None:
    """Import torch_npu and look for a device; a one-line cause and fix, or None."""
    try:
        from ascend_ops import device

        device.load_npu_runtime()  # the one place torch_npu is imported (ascend_ops)
    except Exception as exc:  # a broken CANN/torch_npu install surfaces as any error
        return (
            f"torch_npu is installed but failed to import ({type(exc).__name__}: {exc}); "
            "source CANN's set_env.sh (e.g. /usr/local/Ascend/ascend-toolkit/set_env.sh) and "
            "check torch_npu matches torch, or set VLLM_ASCEND_EMULATE=1 for CPU emulation."
        )
    try:
        count = device.device_count() if device.kind() == "npu" else 0
    except Exception as exc:
        return f"torch_npu cannot query devices ({type(exc).__name__}: {exc}); check the driver."
    if count == 0:
        visible = os.environ.get("ASCEND_RT_VISIBLE_DEVICES", "<unset>")
        return (
            f"torch_npu is installed but no NPU is visible (ASCEND_RT_VISIBLE_DEVICES={visible}); "
            "check npu-smi info and the driver, or set VLLM_ASCEND_EMULATE=1 for CPU emulation."
        )
    return None


def _has_simulator() -> bool:
    try:  # finding a submodule imports its package (ascend_ops)
        return importlib.util.find_spec("ascend_ops.simulator") is not None
    except ImportError:
        return False


def _decide() -> None:
    from vllm_ascend_platform import envs

    try:
        mode = envs.requested_mode()
    except ValueError as exc:
        _fail(str(exc))
    if mode == "simulated-npu" and not _has_simulator():
        _fail(
            "VLLM_ASCEND_SIMULATE_NPU=1 needs ascend_ops.simulator, which this ascend-ops "
            "does not ship; install ascend-ops from this checkout (pip install -e "
            "packages/ascend-ops) or unset VLLM_ASCEND_SIMULATE_NPU."
        )
    if mode is None and importlib.util.find_spec("torch_npu") is not None:
        mode = "npu"
    elif mode is None:
        log(
            logging.INFO,
            "vllm-ascend: Ascend platform inactive: torch_npu is not installed and "
            "VLLM_ASCEND_EMULATE is not set; set VLLM_ASCEND_EMULATE=1 to run it in CPU emulation."
        )
        return
    try:
        version_problem = version_check.startup_problem()
    except (ValueError, RuntimeError) as exc:  # a bad skip spelling or a broken layer description
        _fail(str(exc))
    if version_problem:
        _fail(version_problem)
    if mode == "npu":
        problem = _npu_problem()
        if problem:
            _fail(problem)
    sel = plugin_selection()
    _state.problems.extend(_selection_problems(sel))
    for problem in _state.problems:
        log(logging.ERROR, "vllm-ascend: %s", problem)
    _state.mode, _state.qualname = mode, PLATFORM_QUALNAME
    log(logging.INFO, "vllm-ascend: Ascend platform active (%s mode); %s", mode, sel.describe())


def platform_plugin() -> str | None:
    """The NPUPlatform qualified name when Ascend is wanted, else None (decided once).

    Raises:
        SystemExit: Ascend is wanted but cannot run; the message names cause and fix.
    """
    if not _state.decided:
        _state.decided = True
        _decide()
    return _state.qualname


def current_mode() -> str | None:
    """``"emulation"``, ``"simulated-npu"``, ``"npu"``, or None when the plugin is inactive
    (or undecided)."""
    return _state.mode


# --------------------------------------------------------------------------- layers
def mark_layers_registered(layers: dict[str, str]) -> None:
    """Record (from the meta-package's general plugin) the layers registered in this process.

    Args:
        layers: layer key (``"attention"``) -> installed version.
    """
    _state.layers_registered = dict(layers)


def layers_registered() -> dict[str, str] | None:
    """Layers registered in this process, or None when the general plugin has not run."""
    return _state.layers_registered


def _layers_problem() -> str | None:
    if _state.layers_registered is not None:
        return None
    from vllm.plugins import load_general_plugins

    load_general_plugins()  # idempotent; honours VLLM_PLUGINS exactly as vLLM does
    if _state.layers_registered is not None:
        return None
    sel = plugin_selection()
    if sel.env is not None and LAYERS_ENTRY not in sel.env.split(","):
        why = f"VLLM_PLUGINS={sel.env!r} names {PLATFORM_ENTRY!r} but not {LAYERS_ENTRY!r}"
    else:
        why = f"the general plugin {LAYERS_ENTRY!r} (vllm_ascend:register_layers) did not run"
    return (
        f"the Ascend platform is active but its layers are not registered: {why}; "
        f"set VLLM_PLUGINS={PLATFORM_ENTRY},{LAYERS_ENTRY} (or unset VLLM_PLUGINS) and make "
        "sure the vllm-ascend meta-package is installed."
    )


# --------------------------------------------------------------------------- start-up check
def startup_check(vllm_config: Any) -> Any:
    """Refuse a start that cannot work; call first in ``NPUPlatform.check_and_update_config``.

    Checks, in order: problems recorded by the plugin decision, the vLLM version,
    that the layers' general plugin ran, drifted patches, ``additional_config``
    (parsed into this process's AscendConfig) and refused features.

    Returns:
        The parsed :class:`~vllm_ascend_platform.startup.config.AscendConfig`.

    Raises:
        AscendStartupError: plugin, version, layer or patch problems (all listed).
        AscendConfigError: ``additional_config`` has an unknown key or a wrong type.
        UnsupportedFeatureError: the configuration asks for a feature not built yet.
    """
    from vllm_ascend_platform import envs
    from vllm_ascend_platform.host import kernel_report
    from vllm_ascend_platform.options.features import check_features
    from vllm_ascend_platform.options.spec_decode import check_speculative_config
    from vllm_ascend_platform.patches import registry as patches
    from vllm_ascend_platform.startup.config import init_ascend_config

    problems = list(_state.problems)
    version_problem = version_check.startup_problem()
    if version_problem:
        problems.append(version_problem)
    layers_problem = _layers_problem()
    if layers_problem:
        problems.append(layers_problem)
    problems.extend(patches.drift_problems())
    problems.extend(kernel_report.problems(envs.requested_mode()))  # no silent reference kernels
    if problems:
        raise AscendStartupError("vllm-ascend cannot start:\n- " + "\n- ".join(problems))
    ascend_config = init_ascend_config(vllm_config)
    check_features(vllm_config, ascend_config)
    check_speculative_config(vllm_config)
    return ascend_config


def _reset_for_tests() -> None:
    """Forget this process's decision (tests only)."""
    global _state
    _state = _State()
    version_check._reset_for_tests()
