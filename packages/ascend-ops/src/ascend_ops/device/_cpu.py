# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""CPU emulation of the device runtime: no-op streams/events, eager graphs, budgeted memory."""

from __future__ import annotations

import contextlib
import time

import torch

_DEFAULT_BUDGET = 8 << 30
_budget = _DEFAULT_BUDGET


def set_emulated_memory(total_bytes: int) -> None:
    global _budget
    if int(total_bytes) <= 0:
        raise ValueError(f"total_bytes must be positive, got {total_bytes}")
    _budget = int(total_bytes)


def emulated_memory() -> int:
    return _budget


def current_device():
    return torch.device("cpu")


def synchronize(device=None) -> None:
    return None


def mem_get_info(device=None) -> tuple[int, int]:
    """Budget minus the bytes the process is known to hold: its RSS less the host copies that
    sleep mode keeps of offloaded tensors (host memory, not emulated device memory;
    ``tagged_memory.TaggedMemory.host_bytes``), bounded by the budget."""
    from ascend_ops.device.tagged_memory import default_pool

    used = 0
    try:
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[1]) * 4096
    except OSError:
        used = 0
    used = min(max(used - default_pool().host_bytes(), 0), _budget)
    return _budget - used, _budget


class Stream:
    """A CPU stand-in for an NPU stream: work runs eagerly, so waits and syncs are no-ops."""

    def __init__(self, device=None, priority: int = 0):
        self.device = torch.device("cpu")
        self.priority = priority

    def synchronize(self) -> None:
        return None

    def wait_stream(self, other: Stream) -> None:
        return None

    def wait_event(self, event: Event) -> None:
        return None

    def record_event(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record(self)
        return event

    def query(self) -> bool:
        return True


_default_stream = Stream()


def current_stream(device=None) -> Stream:
    return _default_stream


@contextlib.contextmanager
def stream(s: Stream | None):
    yield s


class Event:
    """A CPU event: records a wall-clock time when recorded (timing in milliseconds)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False):
        self.enable_timing = enable_timing
        self._time: float | None = None

    def record(self, stream: Stream | None = None) -> None:
        self._time = time.perf_counter()

    def synchronize(self) -> None:
        return None

    def wait(self, stream: Stream | None = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: Event) -> float:
        if self._time is None or end._time is None:
            raise ValueError("both events must be recorded before elapsed_time")
        return (end._time - self._time) * 1000.0


class ExternalEvent:
    """CPU stand-in for torch.npu.ExternalEvent: record/wait/reset are no-ops."""

    def record(self, stream: Stream | None = None) -> None:
        return None

    def wait(self, stream: Stream | None = None) -> None:
        return None

    def reset(self, stream: Stream | None = None) -> None:
        return None


def graph_task_group_begin(stream) -> None:
    return None


def graph_task_group_end(stream) -> None:
    return None


def graph_task_update_begin(stream, handle) -> None:
    return None


def graph_task_update_end(stream) -> None:
    return None


class Graph:
    """Capture object with NPUGraph's surface; on CPU it records the callable and replays eagerly.

    Use ``graph.capture_callable(fn)`` (or ``with graph_capture(graph): ...`` on NPU). ``replay()``
    calls the recorded callable again; without one it does nothing.
    """

    def __init__(self):
        self._fn = None

    def capture_begin(self, *args, **kwargs) -> None:
        return None

    def capture_end(self) -> None:
        return None

    def capture_callable(self, fn):
        self._fn = fn
        return fn()

    def replay(self):
        return self._fn() if self._fn is not None else None

    def reset(self) -> None:
        self._fn = None
