"""Device runtime seam: the only place that talks to the device runtime (torch.npu or CPU).

``current_device()``, ``synchronize()``, ``Stream``, ``Event``, ``mem_get_info()``, ``Graph`` and
``set_emulated_memory()`` resolve to the torch.npu implementation when torch_npu is imported and
an NPU is available, else to the CPU emulation (``kind()`` says which).
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


def set_emulated_memory(total_bytes: int) -> None:
    """Set the emulated device memory budget in bytes (CPU emulation; ValueError if <= 0)."""
    _cpu.set_emulated_memory(total_bytes)


def emulated_memory() -> int:
    """The emulated device memory budget in bytes."""
    return _cpu.emulated_memory()


def __getattr__(name: str):
    if name in ("Stream", "Event", "Graph", "stream", "current_stream"):
        return getattr(_impl(), name)
    raise AttributeError(f"module 'ascend_ops.device' has no attribute {name!r}")


__all__ = [
    "Event",
    "Graph",
    "Stream",
    "current_device",
    "current_stream",
    "emulated_memory",
    "kind",
    "mem_get_info",
    "set_emulated_memory",
    "stream",
    "synchronize",
]
