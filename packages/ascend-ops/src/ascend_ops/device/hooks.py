# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""What a device runtime installed from outside registers with ``ascend_ops``: the simulated NPU
(``ascend_ops.simulator.install()``, docs/simulated-npu.md) registers here, so neither
``ascend_ops.device`` nor the op dispatch imports the simulator.

* :func:`simulator_active`: True between the simulator's ``install()`` and ``uninstall()``; the
  op dispatch then picks the torch_npu branch for CPU tensors (``ascend_ops._dispatch``).
* :func:`account`: moves the simulated device's accounted memory by the bytes the tagged memory
  of sleep mode releases or restores (``device.tagged_memory``); no-op when nothing registered.
"""

from __future__ import annotations

from collections.abc import Callable

_memory: tuple[Callable[[int], None], Callable[[int], None]] | None = None
_simulator = False


def register_simulator(alloc: Callable[[int], None], free: Callable[[int], None]) -> None:
    """The simulator is installed: report simulated NPU mode and account memory with
    ``alloc(nbytes)`` / ``free(nbytes)``."""
    global _memory, _simulator
    _memory = (alloc, free)
    _simulator = True


def unregister_simulator() -> None:
    """The simulator was uninstalled: back to the other modes, no memory accounting."""
    global _memory, _simulator
    _memory = None
    _simulator = False


def simulator_active() -> bool:
    """True while a simulator is registered (between ``install()`` and ``uninstall()``)."""
    return _simulator


def account(nbytes: int) -> None:
    """Move the registered simulator's accounted usage by ``nbytes`` (> 0 allocated, < 0 freed);
    no-op when none is registered."""
    memory = _memory
    if memory is None or nbytes == 0:
        return
    if nbytes > 0:
        memory[0](nbytes)
    else:
        memory[1](-nbytes)
