# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The kernel backend of each ``ascend_ops`` op family in this process's mode, for the start-up
line, ``startup_check`` and ``vllm-ascend doctor`` (the rule itself: ``ascend_ops._dispatch``).

NPU and simulated-NPU mode run the torch_npu branch (the simulator stands in for torch_npu,
docs/simulated-npu.md); CPU emulation runs the compiled ``ascend_ops._C`` kernels, and refuses to
start without them unless ``ASCEND_OPS_BACKEND=reference`` chooses the pure-torch reference.
"""

from __future__ import annotations

from typing import Any


def _device_type(mode: str | None) -> str:
    return "cpu" if mode == "emulation" else "npu"


def families(mode: str | None) -> list[Any]:
    """``ascend_ops.backends.FamilyBackend`` per op family for ``mode`` (``envs.requested_mode()``:
    ``"emulation"``, ``"simulated-npu"`` or None for NPU)."""
    from ascend_ops import backends

    return backends.kernel_backends(_device_type(mode))


def summary(mode: str | None) -> str:
    """One line for the start-up log: op families grouped by backend, each group with the
    reason doctor gives for it (``ascend_ops.backends.summary`` over :func:`families`' rule)."""
    from ascend_ops import backends

    return backends.summary(_device_type(mode))


def problems(mode: str | None) -> list[str]:
    """One line per op family that cannot run in ``mode`` (the import failure of
    ``ascend_ops._C`` and the fix), empty when every family has a backend."""
    missing = [fb for fb in families(mode) if fb.backend is None]
    if not missing:
        return []
    names = ", ".join(fb.family for fb in missing)
    return [f"kernels for {names}: {missing[0].reason}"]
