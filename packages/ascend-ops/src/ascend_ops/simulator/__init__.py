# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Simulated NPU: ``torch_npu`` and ``torch.npu`` on the CPU (see ``docs/simulated-npu.md``).

``install(capacity_bytes=64 << 30)`` puts a simulated ``torch_npu`` module (operators defined
from the torch-npu 2.13.0 wheel's published schemas, with constraint checks and reference
kernels) into ``sys.modules`` and a simulated ``torch.npu`` namespace (devices, memory against
``capacity_bytes``, streams/events, ``NPUGraph`` capture/replay with task-group updates) onto
``torch``. Idempotent and cheap after the first call in a process; safe in spawned workers (each
process installs its own). Raises ``SimulatedNpuError`` when the wheel is missing (with the
command that fetches it) or when a real torch_npu is already imported.
"""

from __future__ import annotations

import sys
import threading

import torch

from ascend_ops.device import hooks
from ascend_ops.simulator import ledger  # callable: ledger() -> the process-wide Ledger
from ascend_ops.simulator.errors import SimulatedNpuError
from ascend_ops.simulator.ledger import Ledger, call_sites, static_call_sites
from ascend_ops.simulator.recording import tracking

DEFAULT_CAPACITY = 64 << 30
_lock = threading.Lock()
_installed: dict = {}


# patch: simulated-npu (declared in vllm_ascend_platform.patches.registry; docs/architecture.md)
def install(capacity_bytes: int | None = None, device_count: int | None = None):
    """Install the simulator in this process and return the simulated ``torch_npu`` module.

    ``capacity_bytes`` (default 64 GiB) is the simulated device memory; ``device_count``
    (default 1, or the number of ids in ``ASCEND_RT_VISIBLE_DEVICES``) the visible NPUs. A later
    call with explicit values changes them (memory counters and the current device are kept);
    without arguments it only returns the module.
    Raises ``SimulatedNpuError`` if a real torch_npu is imported, or the wheel is missing.
    """
    from ascend_ops.simulator import runtime

    with _lock:
        if "module" in _installed:
            if capacity_bytes is not None or device_count is not None:
                runtime.configure(capacity_bytes or runtime.MEMORY.capacity,
                                  device_count or runtime._State.device_count, fresh=False)
            return _installed["module"]
        existing = sys.modules.get("torch_npu")
        if existing is not None and not getattr(existing, "__simulated__", False):
            raise SimulatedNpuError(
                "install: a real torch_npu is already imported in this process; the simulator "
                "replaces torch_npu, so install it before anything imports torch_npu")
        from ascend_ops.simulator import library, schemas

        runtime.configure(capacity_bytes or DEFAULT_CAPACITY, device_count or _visible_devices())
        namespace = runtime.build_namespace()
        module = library.build_module(schemas.published_schemas(), namespace)
        _installed["previous"] = {k: sys.modules.get(k) for k in _MODULE_KEYS}
        _installed["previous_npu"] = getattr(torch, "npu", None)
        sys.modules["torch_npu"] = module
        sys.modules["torch.npu"] = namespace
        sys.modules["torch_npu.npu"] = namespace
        torch.npu = namespace
        _installed["wrapped"] = _wrap_npu_modules()
        from ascend_ops.simulator import streams

        streams.patch_host_reads(True)
        streams.ensure_mode()  # this thread's device ops meet the asynchronous device
        _installed["module"] = module
        hooks.register_simulator(account_alloc, account_free)
        return module


_MODULE_KEYS = ("torch_npu", "torch.npu", "torch_npu.npu")


def _npu_modules() -> list:
    """ascend_ops' NPU modules: ``ascend_ops.npu.*`` and ``ascend_ops.device._npu*``."""
    import importlib
    import pkgutil

    import ascend_ops.device
    import ascend_ops.npu

    mods = []
    for pkg, prefix in ((ascend_ops.npu, ""), (ascend_ops.device, "_npu")):
        for info in pkgutil.iter_modules(pkg.__path__):
            if info.name.startswith(prefix):
                mods.append(importlib.import_module(f"{pkg.__name__}.{info.name}"))
    return mods


def _wrap_npu_modules() -> list:
    """Make each function of our NPU modules record its caller's line (``call_sites()``), so
    ``_npu.X(...)`` sites count as executed like ``torch_npu.X`` ones. Returns what to undo."""
    import functools
    import types

    from ascend_ops.simulator.ledger import record_call

    undo = []
    for mod in _npu_modules():
        for name, fn in list(vars(mod).items()):
            if isinstance(fn, types.FunctionType) and fn.__module__ == mod.__name__:
                def make(fn=fn, own=mod.__file__):
                    @functools.wraps(fn)
                    def call(*args, **kwargs):
                        if sys._getframe(1).f_code.co_filename != own:  # not the module's own helpers
                            record_call(2)
                        return fn(*args, **kwargs)
                    return call
                setattr(mod, name, make())
                undo.append((mod, name, fn))
    return undo


# patch: simulated-npu (declared in vllm_ascend_platform.patches.registry; docs/architecture.md)
def uninstall() -> None:
    """Undo ``install()`` in this process (tests): restore ``sys.modules``, ``torch.npu`` and our
    NPU modules' functions; the ``torch.library`` definitions stay. No-op when not installed."""
    with _lock:
        if "module" not in _installed:
            return
        from ascend_ops.simulator import graph, streams

        streams.QUEUE.clear()
        graph.abandon_update()
        streams.remove_mode()
        streams.patch_host_reads(False)
        for key, mod in _installed["previous"].items():
            if mod is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = mod
        if _installed["previous_npu"] is None:
            if hasattr(torch, "npu"):
                delattr(torch, "npu")
        else:
            torch.npu = _installed["previous_npu"]
        for mod, name, fn in _installed["wrapped"]:
            setattr(mod, name, fn)
        _installed.clear()
        hooks.unregister_simulator()


def _visible_devices() -> int:
    import os

    ids = [x for x in os.environ.get("ASCEND_RT_VISIBLE_DEVICES", "").split(",") if x.strip()]
    return max(1, len(ids))


def active() -> bool:
    """True once ``install()`` ran in this process."""
    return "module" in _installed


def account_alloc(nbytes: int) -> None:
    """Tell the simulated allocator that ``nbytes`` of device memory were allocated
    (``torch.OutOfMemoryError`` past the capacity)."""
    from ascend_ops.simulator import runtime

    runtime.MEMORY.alloc(nbytes)


def account_free(nbytes: int) -> None:
    """Tell the simulated allocator that ``nbytes`` were freed."""
    from ascend_ops.simulator import runtime

    runtime.MEMORY.free(nbytes)


__all__ = [
    "DEFAULT_CAPACITY",
    "Ledger",
    "SimulatedNpuError",
    "account_alloc",
    "account_free",
    "active",
    "call_sites",
    "install",
    "ledger",
    "static_call_sites",
    "tracking",
    "uninstall",
]
