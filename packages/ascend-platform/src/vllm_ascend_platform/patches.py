"""The patch registry (docs/architecture.md, "Add a patch"): every monkey-patch of vLLM, declared.

Monkey-patching vLLM internals is the last resort. Each patch states the vLLM
symbol it touches, the vLLM versions it was written for, why upstream cannot be
used as is, and a drift check that the target still looks as expected. Patches
are applied once per process (``apply_patches``, called by the general plugin in
every vLLM process); ``vllm-ascend doctor`` lists each as applied, skipped
(vLLM outside its range) or drifted (target no longer as expected). A drifted
patch is never applied, and ``startup_check`` refuses to start with it.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import SpecifierSet

logger = logging.getLogger("vllm.ascend")

APPLIED, SKIPPED, DRIFTED, PENDING = "applied", "skipped", "drifted", "pending"


@dataclass(frozen=True)
class Patch:
    """One declared patch of a vLLM symbol.

    Attributes:
        name: short unique id, e.g. ``"sampler-cpu-path"``.
        target: the patched symbol as ``"module:attr.path"`` (``"vllm.x.y:Class.method"``).
        vllm_versions: PEP 440 specifier of vLLM versions it was written for (``">=0.32,<0.33"``).
        why: one sentence on why upstream cannot be used as is.
        check: called with the current target object; True when it still looks as expected.
        apply: installs the patch; called at most once per process.
    """

    name: str
    target: str
    vllm_versions: str
    why: str
    check: Callable[[Any], bool]
    apply: Callable[[], None]


@dataclass(frozen=True)
class PatchStatus:
    patch: Patch
    state: str  # applied | skipped | drifted | pending (would apply; not applied in this process)
    reason: str


_REGISTRY: dict[str, Patch] = {}
_STATE: dict[str, PatchStatus] = {}
_applied_once = False


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
    _REGISTRY[patch.name] = patch
    return patch


def resolve_target(target: str) -> Any:
    """Import ``"module:attr.path"`` and return the object (AttributeError/ImportError if gone)."""
    module_name, _, attr_path = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr_path.split("."):
        obj = getattr(obj, part)
    return obj


def _evaluate(patch: Patch, vllm_version: str) -> PatchStatus:
    if not SpecifierSet(patch.vllm_versions).contains(vllm_version, prereleases=True):
        return PatchStatus(patch, SKIPPED, f"vLLM {vllm_version} outside {patch.vllm_versions}")
    try:
        looks_right = bool(patch.check(resolve_target(patch.target)))
        reason = "drift check failed" if not looks_right else ""
    except Exception as exc:  # the target vanished or the check itself broke: drift
        looks_right, reason = False, f"{type(exc).__name__}: {exc}"
    if not looks_right:
        return PatchStatus(patch, DRIFTED, f"{patch.target}: {reason}")
    return PatchStatus(patch, PENDING, "would apply")


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


def patch_statuses(vllm_version: str | None) -> list[PatchStatus]:
    """Status of every registered patch for doctor: this process's result when applied,
    else what would happen (``pending``) without applying anything."""
    out = []
    for patch in _REGISTRY.values():
        if patch.name in _STATE:
            out.append(_STATE[patch.name])
        elif vllm_version is None:
            out.append(PatchStatus(patch, SKIPPED, "vLLM is not installed"))
        else:
            out.append(_evaluate(patch, vllm_version))
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


# Modules that declare patches: each registers its own at import. Imported here, last, so every
# process that applies patches (the general plugin, ``vllm_ascend.layers``) sees them all.
import vllm_ascend_platform.lora_admission  # noqa: E402,F401
import vllm_ascend_platform.worker_start  # noqa: E402,F401
