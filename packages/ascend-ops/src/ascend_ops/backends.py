# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Which backend each op family runs on, and why (the selection rule of ``ascend_ops._dispatch``).

For start-up logs and ``vllm-ascend doctor``: the caller says where its tensors live
(``"npu"`` on Ascend, ``"cpu"`` in CPU emulation; the simulated NPU is detected here) and gets
one line per op family. Nothing is executed and no op is counted.
"""

from __future__ import annotations

from dataclasses import dataclass

from ascend_ops import _dispatch, families

#: op family (``ascend_ops.ops.<family>``) -> whether ``ascend_ops._C`` has CPU kernels for it;
#: a family without them runs the pure-torch reference on CPU even when ``_C`` loads (read from
#: the family table, ``ascend_ops.families``)
FAMILIES: dict[str, bool] = {name: families.FAMILIES[name].has_native
                             for name in sorted(families.FAMILIES)}


@dataclass(frozen=True)
class FamilyBackend:
    """One op family's backend.

    Attributes:
        family: ``ascend_ops.ops`` module name (``"attention"``).
        backend: ``"npu"``, ``"native"`` or ``"reference"``; None when the family cannot run
            (``reason`` says why and how to fix it).
        reason: why this backend, in words.
    """

    family: str
    backend: str | None
    reason: str


def kernel_backends(device_type: str = "cpu") -> list[FamilyBackend]:
    """The backend of every op family for tensors on ``device_type``.

    Args:
        device_type: ``"npu"`` or ``"cpu"`` (where the caller's tensors live).

    Raises:
        ValueError: another ``device_type``, or ``ASCEND_OPS_BACKEND`` names no backend.
    """
    if device_type not in ("npu", "cpu"):
        raise ValueError(f"device_type must be 'npu' or 'cpu', got {device_type!r}")
    forced = _dispatch.forced_backend()
    out = []
    for family, has_native in FAMILIES.items():
        backend: str | None
        if forced is not None:
            backend, reason = forced, f"chosen explicitly (ASCEND_OPS_BACKEND={forced})"
            if forced == "native" and not _dispatch.native_available():
                backend, reason = None, native_problem() or reason
            elif forced == "native" and not has_native:
                backend, reason = "reference", "ASCEND_OPS_BACKEND=native, but _C has no kernel " \
                    "for this family: pure-torch reference"
        elif _dispatch._simulated():
            backend, reason = "npu", "simulated NPU active: the torch_npu branch on the simulator"
        elif device_type == "npu":
            backend, reason = "npu", "tensors on the NPU: torch_npu operators"
        elif not has_native:
            backend, reason = "reference", "no compiled CPU kernel for this family: pure-torch reference"
        elif _dispatch.native_available():
            backend, reason = "native", ("CPU tensors: compiled kernels (ascend_ops._C, "
                                         f"{_dispatch.native_vector_isa()} build)")
        else:
            backend, reason = None, native_problem() or ""
        out.append(FamilyBackend(family, backend, reason))
    return out


def native_problem() -> str | None:
    """The error text when ``ascend_ops._C`` did not import (its import failure and the fix),
    else None."""
    if _dispatch.native_available():
        return None
    return (f"ascend_ops._C did not import ({_dispatch._native_error}); "
            + _dispatch.REBUILD_HINT)


def summary(device_type: str = "cpu") -> str:
    """One line: families grouped by backend and reason, the reason in parentheses
    (``"native: activation, ... (CPU tensors: ...); reference: mla (no compiled ...)"``).

    The backend and reason are :func:`kernel_backends`' (what ``vllm-ascend doctor`` lists per
    family), so the start-up log and doctor cannot disagree.

    Raises:
        ValueError: as :func:`kernel_backends`.
    """
    groups: dict[tuple[str, str], list[str]] = {}
    for fb in kernel_backends(device_type):
        groups.setdefault((fb.backend or "UNAVAILABLE", fb.reason), []).append(fb.family)
    return "; ".join(f"{backend}: {', '.join(families)}" + (f" ({reason})" if reason else "")
                     for (backend, reason), families in groups.items())
