# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Process-wide set-up for simulated-NPU mode (``VLLM_ASCEND_SIMULATE_NPU=1``).

The platform module calls :func:`install_simulated_npu` when it is imported, i.e. in every vLLM
process that resolves our platform (engine core, spawned TP workers, Ray actors), before any
model code runs. It puts the simulated ``torch_npu`` / ``torch.npu`` in place
(``ascend_ops.simulator.install``, docs/simulated-npu.md) instead of importing the real
torch_npu, with the simulated device's capacity taken from ``VLLM_ASCEND_EMULATE_DEVICE_MEMORY``
(default 8 GiB, at most half the host RAM: the simulated device's tensors are host tensors),
on a node of 8 NPUs unless ``ASCEND_RT_VISIBLE_DEVICES`` lists the visible ones.

CPU-only torch has no accelerator, so ``torch.accelerator.synchronize()``, ``empty_cache()``,
``empty_host_cache()`` and ``get_memory_info()`` (called unconditionally by vLLM's loaders,
runner and shutdown) raise; here they go to the simulated runtime through ``ascend_ops.device``
(a synchronize is a host sync the simulator counts, and refuses inside a graph capture;
``empty_cache`` returns the simulated caching allocator's freed blocks, so ``mem_get_info`` sees
memory an earlier engine of the process released).

With ``ASCEND_OPS_SIM_CALLSITES_DIR`` set, each such process writes the simulator's
``call_sites()`` (the torch_npu / torch.npu calls our code made) into that folder when it exits,
for the ``npu_coverage`` nox session.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Any

import torch

_installed = False
#: NPUs a simulated node has when ``ASCEND_RT_VISIBLE_DEVICES`` does not say
SIMULATED_DEVICES = 8


# patch: simulated-npu (declared in vllm_ascend_platform.patches.registry; docs/architecture.md)
def install_simulated_npu() -> Any:
    """Install the simulator and the ``torch.accelerator`` stand-ins (idempotent).

    Returns:
        The simulator's installation handle (``ascend_ops.simulator.install``'s return value).

    Raises:
        ValueError: ``VLLM_ASCEND_EMULATE_DEVICE_MEMORY`` is malformed or too large.
    """
    global _installed
    from ascend_ops import simulator

    from vllm_ascend_platform import envs

    # an 8-NPU node (Atlas 800T A2) unless ASCEND_RT_VISIBLE_DEVICES names the devices; each
    # process (TP worker) binds its own one by local rank, as on the hardware
    devices = None if os.environ.get("ASCEND_RT_VISIBLE_DEVICES") else SIMULATED_DEVICES
    if not simulator.active():
        _settle_host_library_probes()
    handle = simulator.install(capacity_bytes=envs.emulated_device_memory(), device_count=devices)
    if _installed:
        return handle

    # Distinct functions: Dynamo keys its handling on the ``synchronize`` object.
    def synchronize(*args: Any, **kwargs: Any) -> None:
        from ascend_ops import device

        device.synchronize()

    def empty_cache(*args: Any, **kwargs: Any) -> None:
        from ascend_ops.simulator import runtime  # torch.npu.empty_cache of the simulator

        runtime.empty_cache()

    def empty_host_cache(*args: Any, **kwargs: Any) -> None:
        return None

    def get_memory_info(*args: Any, **kwargs: Any) -> tuple[int, int]:
        from ascend_ops import device

        return device.mem_get_info()

    torch.accelerator.synchronize = synchronize
    torch.accelerator.get_memory_info = get_memory_info
    torch.accelerator.empty_cache = empty_cache
    torch.accelerator.empty_host_cache = empty_host_cache
    atexit.register(_dump_at_exit)
    _installed = True
    return handle


def _settle_host_library_probes() -> None:
    """Let transformers and accelerate decide "no NPU" before the simulated torch_npu exists.

    Both cache (``functools.lru_cache``) whether torch_npu is importable
    (``transformers.utils.import_utils.is_torch_npu_available``,
    ``accelerate.utils.imports.is_npu_available``). Asked after the simulator is installed they
    would answer yes and import torch_npu kernels the project never calls (transformers'
    ``integrations/npu_flash_attention.py`` imports ``npu_fusion_attention`` at import time),
    although the device tensors here are CPU tensors and those libraries must treat the host as
    a CPU. Asked first, with no real torch_npu installed, they cache "no" for this process.
    """
    probes = (("transformers.utils.import_utils", "is_torch_npu_available"),
              ("accelerate.utils.imports", "is_npu_available"))
    import importlib

    for module, name in probes:
        try:
            probe = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):  # library absent or reorganised: nothing cached
            continue
        # lru_cache keys on the call's form: cache every form the libraries use
        probe()
        for check_device in (False, True):
            probe(check_device)
            probe(check_device=check_device)


class DeviceHolding:
    """Named amounts of simulated device memory one owner holds (weights, KV cache).

    ``hold(name, nbytes)`` accounts ``nbytes`` (replacing what ``name`` held before); all of it
    is released by :meth:`release` (the worker's shutdown) or, at the latest, when the owner is
    garbage-collected (``weakref.finalize``), as a real device allocator frees an engine's
    tensors when the engine goes away; several engines built one after another in one process
    then each see the whole device.
    """

    def __init__(self, owner: object):
        import weakref

        self._held: dict[str, int] = {}
        weakref.finalize(owner, DeviceHolding._release, self._held)

    def hold(self, name: str, nbytes: int) -> None:
        previous = self._held.pop(name, 0)
        if previous:
            account_free(previous)
        account_alloc(nbytes)
        self._held[name] = int(nbytes)

    def release(self) -> None:
        """Free everything held (idempotent)."""
        DeviceHolding._release(self._held)

    @staticmethod
    def _release(held: dict[str, int]) -> None:
        total = sum(held.values())
        held.clear()
        if total:
            account_free(total)
            torch.accelerator.empty_cache()


def account_alloc(nbytes: int) -> None:
    """Tell the simulated device that ``nbytes`` of device memory are now held (weights, KV
    cache): ``mem_get_info`` / ``memory_allocated`` then report them."""
    from ascend_ops import simulator

    simulator.account_alloc(int(nbytes))


def account_free(nbytes: int) -> None:
    """Release ``nbytes`` accounted with :func:`account_alloc`."""
    from ascend_ops import simulator

    simulator.account_free(int(nbytes))


#: folder into which each simulated-NPU process writes the simulator's ``call_sites()`` when it
#: exits (read by the ``npu_coverage`` nox session); unset: nothing is written
CALLSITES_DIR_ENV = "ASCEND_OPS_SIM_CALLSITES_DIR"


def dump_call_sites(folder: str) -> str:
    """Write ``ascend_ops.simulator.call_sites()`` of this process to a new JSON file in
    ``folder``: ``{"pid": int, "sites": [[file, line, calls], ...]}`` (file relative to the
    repo root, as the simulator reports it). Returns the file's path."""
    import json
    import uuid
    from pathlib import Path

    from ascend_ops import simulator

    sites = [[file, int(line), int(n)] for (file, line), n in simulator.call_sites().items()]
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    out = path / f"callsites-{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
    out.write_text(json.dumps({"pid": os.getpid(), "sites": sites}))
    return str(out)


def _dump_at_exit() -> None:
    folder = os.environ.get(CALLSITES_DIR_ENV)
    if folder:
        try:
            dump_call_sites(folder)
        except Exception as exc:  # never turn a clean exit into a crash; say why nothing came
            print(f"vllm-ascend: could not write simulator call sites to {folder}: {exc}",
                  file=sys.stderr)
