# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Device runtime seam: the only place that talks to the device runtime (torch.npu or CPU).

``current_device()``, ``synchronize()``, ``Stream``, ``Event``, ``ExternalEvent``,
``mem_get_info()``, ``Graph``, the graph-task functions and ``set_emulated_memory()`` resolve to
the torch.npu implementation when torch_npu is imported and an NPU is available (a real one, or
the simulated NPU of ``ascend_ops.simulator``: ``kind() == "npu"`` and ``current_device()`` is
``cpu`` there), else to the CPU emulation (``kind()`` says which).
"""

from __future__ import annotations

from ascend_ops.device import _cpu, _npu


def _impl():
    return _npu if _npu.available() else _cpu


def kind() -> str:
    """``"npu"`` when torch_npu is loaded and an NPU is visible, else ``"cpu"``."""
    return "npu" if _npu.available() else "cpu"


def current_device():
    """The current ``torch.device`` (``npu:<index>`` or ``cpu``)."""
    return _impl().current_device()


def synchronize(device=None) -> None:
    """Block until all queued work on the device is done (no-op on CPU)."""
    _impl().synchronize(device)


def mem_get_info(device=None) -> tuple[int, int]:
    """(free_bytes, total_bytes) of device memory; on CPU the emulated budget (set_emulated_memory)."""
    return _impl().mem_get_info(device)


def load_npu_runtime():
    """Import torch_npu (registers the ``npu`` device with torch) and return the module.

    This is the one place in the project that imports torch_npu. Call it only when the NPU is
    wanted: in an environment without CANN, importing torch_npu fails.

    Raises:
        RuntimeError: naming the import error and the fix (install CANN and a torch_npu
            matching torch, or use CPU emulation).
    """
    return _npu.load()


def set_device(device) -> None:
    """Make ``device`` (``npu:<i>`` or an index) current for this process (no-op on CPU)."""
    if _npu.available():
        _npu.set_device(device)


def device_count() -> int:
    """Number of visible NPUs (1 on CPU: the emulated device)."""
    return _npu.device_count() if _npu.available() else 1


def get_device_name(index: int = 0) -> str:
    """SoC name of NPU ``index`` (e.g. ``Ascend910B2``); ``"cpu"`` in emulation."""
    return _npu.get_device_name(index) if _npu.available() else "cpu"


def manual_seed_all(seed: int) -> None:
    """Seed every NPU's default generator (no-op on CPU, where torch.manual_seed covers it)."""
    if _npu.available():
        _npu.manual_seed_all(seed)


def stream_api() -> dict:
    """``Stream``, ``Event``, ``current_stream`` and ``stream`` of the current runtime (torch.npu
    or the CPU stand-ins), resolved with one availability check: what a caller that swaps a
    CUDA-style stream API in and out every step needs (module attribute access checks once per
    name)."""
    impl = _impl()
    return {"Stream": impl.Stream, "Event": impl.Event, "current_stream": impl.current_stream,
            "stream": impl.stream}


def is_capturing() -> bool:
    """True while the current stream is capturing a device graph (always False on CPU)."""
    return _npu.is_capturing() if _npu.available() else False


def hccl_process_group_cls():
    """torch_npu's ``ProcessGroupHCCL`` class (for process groups built outside torch's globals).

    Raises:
        RuntimeError: when torch_npu cannot be imported (see ``load_npu_runtime``).
    """
    _npu.load()
    return _npu.hccl_process_group_cls()


def graph_task_group_begin(stream) -> None:
    """Open a graph task group on ``stream`` during capture (``torch.npu.graph_task_group_begin``;
    no-op in CPU emulation)."""
    _impl().graph_task_group_begin(stream)


def graph_task_group_end(stream):
    """Close the task group; returns its handle (None in CPU emulation)."""
    return _impl().graph_task_group_end(stream)


def graph_task_update_begin(stream, handle) -> None:
    """Start re-issuing the ops of task group ``handle``: they replace the group's ops for later
    replays and are not executed now (``torch.npu.graph_task_update_begin``; no-op on CPU)."""
    _impl().graph_task_update_begin(stream, handle)


def graph_task_update_end(stream) -> None:
    """Finish the update started by ``graph_task_update_begin`` (no-op in CPU emulation)."""
    _impl().graph_task_update_end(stream)


def set_emulated_memory(total_bytes: int) -> None:
    """Set the emulated device memory budget in bytes (CPU emulation; ValueError if <= 0)."""
    _cpu.set_emulated_memory(total_bytes)


def emulated_memory() -> int:
    """The emulated device memory budget in bytes."""
    return _cpu.emulated_memory()


def __getattr__(name: str):
    if name in ("Stream", "Event", "ExternalEvent", "Graph", "stream", "current_stream"):
        return getattr(_impl(), name)
    raise AttributeError(f"module 'ascend_ops.device' has no attribute {name!r}")


__all__ = [
    "Event",
    "ExternalEvent",
    "Graph",
    "Stream",
    "current_device",
    "device_count",
    "get_device_name",
    "graph_task_group_begin",
    "graph_task_group_end",
    "graph_task_update_begin",
    "graph_task_update_end",
    "hccl_process_group_cls",
    "is_capturing",
    "load_npu_runtime",
    "manual_seed_all",
    "set_device",
    "stream_api",
    "current_stream",
    "emulated_memory",
    "kind",
    "mem_get_info",
    "set_emulated_memory",
    "stream",
    "synchronize",
]
