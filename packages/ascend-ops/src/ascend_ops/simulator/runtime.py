# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The simulated ``torch.npu`` namespace: devices, memory accounting, streams and events.

Surface and meaning follow torch_npu 2.13.0 (``torch_npu/npu/__init__.py``, ``memory.py``,
``streams.py``); streams are queues that run behind the host (``streams``). Graph capture lives
in ``graph``. Every public function records its caller's line for ``call_sites()`` (``_api``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.machinery
import threading
import time
import types
from typing import Any

import torch

from ascend_ops.simulator import graph, soc, streams
from ascend_ops.simulator.errors import SimulatedNpuError
from ascend_ops.simulator.ledger import record_call


class Memory:
    """Device memory against a fixed capacity. ``allocated`` grows with ``account_alloc`` and
    shrinks with ``account_free``; ``reserved`` is the high-water mark since the last
    ``empty_cache`` (the caching allocator keeps freed blocks); ``peak`` the max of allocated."""

    def __init__(self, capacity: int):
        self.lock = threading.Lock()
        self.configure(capacity)

    def configure(self, capacity: int) -> None:
        if int(capacity) <= 0:
            raise ValueError(f"capacity_bytes must be positive, got {capacity}")
        self.capacity = int(capacity)
        self.allocated = self.reserved = self.peak = 0

    def alloc(self, nbytes: int) -> None:
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes}")
        with self.lock:
            if self.allocated + nbytes > self.capacity:
                raise torch.OutOfMemoryError(
                    f"simulated NPU out of memory: tried to allocate {nbytes} bytes with "
                    f"{self.allocated} of {self.capacity} allocated (ascend_ops.simulator.install"
                    "(capacity_bytes=...) sets the capacity)"
                )
            self.allocated += nbytes
            self.reserved = max(self.reserved, self.allocated)
            self.peak = max(self.peak, self.allocated)

    def free(self, nbytes: int) -> None:
        with self.lock:
            self.allocated = max(0, self.allocated - int(nbytes))


MEMORY = Memory(64 << 30)


class _State:
    device_count = 1
    device = 0


def _api(fn):
    """Record the caller's (file, line) for call_sites(), then run ``fn``."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        record_call(2)
        return fn(*args, **kwargs)

    return call


def _index(device) -> int:
    if device is None:
        return _State.device
    if isinstance(device, int):
        return device
    if isinstance(device, str):  # "npu", "npu:1" (torch.device cannot parse "npu" without torch_npu)
        kind, _, idx = device.partition(":")
        if kind not in ("npu", "cpu") or (idx and not idx.isdigit()):
            raise ValueError(f"device must be 'npu' or 'npu:<index>', got {device!r}")
        return int(idx) if idx else _State.device
    if isinstance(device, torch.device):
        return _State.device if device.index is None else device.index
    raise TypeError(f"device must be an int, 'npu:<i>' or a torch.device, got {device!r}")


# ---- streams and events (torch_npu/npu/streams.py) ----


class Stream:
    """A simulated stream: a queue of device work that runs behind the host (``streams``);
    ``synchronize`` runs what is queued (a host sync)."""

    def __init__(self, device=None, priority: int = 0, **kwargs):
        record_call(2)  # constructing torch.npu.Stream(...) is a call site too
        self.device_index = _index(device)
        self.priority = priority
        self.label: str | None = None

    @property
    def device(self):
        return torch.device("cpu")

    def wait_event(self, event) -> None:
        event.wait(self)

    def wait_stream(self, stream) -> None:
        if stream is not self:
            self.wait_event(stream.record_event())

    def record_event(self, event=None):
        event = event if event is not None else Event()
        event.record(self)
        return event

    def query(self) -> bool:
        q = streams.QUEUE.queues.get(id(self))
        return not q

    def synchronize(self) -> None:
        graph.host_sync("Stream.synchronize()")
        streams.QUEUE.drain_stream(self)

    @property
    def npu_stream(self) -> int:
        """Opaque handle (real streams expose the aclrtStream pointer here)."""
        return id(self)

    def __repr__(self):
        return f"<simulated torch.npu.Stream device={self.device_index} priority={self.priority} id={id(self):#x}>"


class Event:
    """A simulated event (CUDA-event semantics, torch_npu ``torch_npu/npu/streams.py``): ``record``
    queues a marker on the stream; ``wait`` orders the waiting stream's later work after the
    latest record; ``synchronize`` forces it; ``elapsed_time`` is wall-clock milliseconds between
    the two markers' execution."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        record_call(2)
        self.enable_timing = enable_timing
        self._time: float | None = None
        self._last: streams.Work | None = None  # the latest record's Work

    def record(self, stream=None) -> None:
        stream = stream if stream is not None else current_stream()

        def mark():
            self._time = time.perf_counter()

        self._last = streams.QUEUE.enqueue(streams.Work(stream, f"Event.record({id(self):#x})", mark))

    def wait(self, stream=None) -> None:
        target = self._last
        if target is None or target.done:
            return  # waiting on an unrecorded (or already reached) event is a no-op
        stream = stream if stream is not None else current_stream()
        streams.QUEUE.enqueue(streams.Work(stream, f"Event.wait({id(self):#x})",
                                           lambda: streams.QUEUE.force(target)))

    def query(self) -> bool:
        return self._last is None or self._last.done

    def synchronize(self) -> None:
        graph.host_sync("Event.synchronize()")
        if self._last is not None:
            streams.QUEUE.force(self._last)

    def elapsed_time(self, end_event) -> float:
        if self._time is None or end_event._time is None:
            # cudaEventElapsedTime / aclrtEventElapsedTime: both events must have completed
            raise RuntimeError("elapsed_time: both events must be recorded and completed (synchronize "
                               "the end event first)")
        return (end_event._time - self._time) * 1000.0


class ExternalEvent:
    """``torch.npu.ExternalEvent``: a flag on the device (torch_npu ``torch_npu/npu/streams.py`` and
    ``torch_npu/csrc/npu/Event.cpp`` @9e73e70, Ascend/pytorch): ``record`` sets it, ``wait`` blocks
    the stream until it is set, then clears it (the wait resets the flag), ``reset`` clears it.
    Inside a graph capture the three are captured as graph tasks (run at each replay); outside,
    they are queued on the stream. A wait no queued record can satisfy raises
    ``SimulatedNpuError`` (a hang on the device)."""

    def __init__(self):
        record_call(2)
        self.flag = False
        self.label = f"ExternalEvent {id(self):#x}"

    def _set(self) -> None:
        self.flag = True

    def _clear(self) -> None:
        self.flag = False

    def _wait(self, stream) -> None:
        if not self.flag:
            streams.QUEUE.satisfy(self, stream)
        self.flag = False

    def _issue(self, what: str, stream, run) -> None:
        stream = stream if stream is not None else current_stream()
        if graph.capture_event_op(f"ExternalEvent.{what}", self, run):
            return
        streams.QUEUE.enqueue(streams.Work(stream, f"{self.label}.{what}", run, event=self))

    def record(self, stream=None) -> None:
        self._issue("record", stream, self._set)

    def wait(self, stream=None) -> None:
        s = stream if stream is not None else current_stream()
        self._issue("wait", stream, lambda: self._wait(s))

    def reset(self, stream=None) -> None:
        self._issue("reset", stream, self._clear)


_default_stream = Stream.__new__(Stream)
_default_stream.device_index, _default_stream.priority = 0, 0
_default_stream.label = "the default stream"
_current = threading.local()


def current_stream(device=None) -> Stream:
    return getattr(_current, "stream", None) or _default_stream


streams.set_current_stream_source(current_stream)


def default_stream(device=None) -> Stream:
    return _default_stream


def set_stream(stream: Stream | None) -> None:
    _current.stream = stream


@contextlib.contextmanager
def stream(s: Stream | None):
    """Make ``s`` the current stream inside the block (None: leave it unchanged)."""
    if s is None:
        yield None
        return
    prev = current_stream()
    _current.stream = s
    try:
        yield s
    finally:
        _current.stream = prev


# ---- devices ----


def is_available() -> bool:
    return True


def is_simulated() -> bool:
    """True: this torch.npu is the CPU simulator (ascend_ops.simulator)."""
    return True


def is_initialized() -> bool:
    return True


def init() -> None:
    return None


def device_count() -> int:
    return _State.device_count


def set_device(device) -> None:
    idx = _index(device)
    if not 0 <= idx < _State.device_count:
        raise SimulatedNpuError(f"set_device: device {idx} out of range (device_count={_State.device_count})")
    _State.device = idx
    streams.ensure_mode()  # the thread that drives the device sees its ops (streams.DeviceMode)


def current_device() -> int:
    return _State.device


def get_device_name(device=None) -> str:
    """The simulated SoC's name (``ASCEND_OPS_SIM_SOC``; ``soc.device_name``)."""
    return soc.device_name()


def get_soc_version() -> int:
    """The simulated SoC's version number (``soc.soc_version``)."""
    return soc.soc_version()


def get_device_properties(device=None):
    return types.SimpleNamespace(name=soc.device_name(), total_memory=MEMORY.capacity, multi_processor_count=1)


def synchronize(device=None) -> None:
    """A host sync: runs every stream's queued work; counted in the ledger; SimulatedNpuError
    inside a graph capture."""
    graph.host_sync("torch.npu.synchronize()")
    streams.QUEUE.drain_all()


def manual_seed(seed: int) -> None:
    torch.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    torch.manual_seed(seed)


def seed() -> None:
    torch.seed()


def get_rng_state(device=None) -> torch.Tensor:
    """The device generator is the CPU generator (tensors live on the CPU)."""
    return torch.get_rng_state()


def set_rng_state(new_state: torch.Tensor, device=None) -> None:
    torch.set_rng_state(new_state)


# ---- memory (torch_npu/npu/memory.py) ----


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes: total = capacity, free = capacity - reserved."""
    return MEMORY.capacity - MEMORY.reserved, MEMORY.capacity


def memory_allocated(device=None) -> int:
    return MEMORY.allocated


def max_memory_allocated(device=None) -> int:
    return MEMORY.peak


def memory_reserved(device=None) -> int:
    return MEMORY.reserved


def max_memory_reserved(device=None) -> int:
    return MEMORY.reserved


def empty_cache() -> None:
    with MEMORY.lock:
        MEMORY.reserved = MEMORY.allocated


def reset_peak_memory_stats(device=None) -> None:
    with MEMORY.lock:
        MEMORY.peak = MEMORY.allocated


def memory_stats(device=None) -> dict:
    return {
        "allocated_bytes.all.current": MEMORY.allocated,
        "allocated_bytes.all.peak": MEMORY.peak,
        "reserved_bytes.all.current": MEMORY.reserved,
    }


def host_empty_cache() -> None:
    return None


def memory_summary(device=None, abbreviated: bool = False) -> str:
    return (f"simulated NPU memory: {MEMORY.allocated} B allocated (peak {MEMORY.peak} B), "
            f"{MEMORY.reserved} B reserved of {MEMORY.capacity} B")


_FUNCTIONS = (
    is_available, is_simulated, is_initialized, init, device_count, set_device, current_device,
    get_device_name, get_soc_version, get_device_properties, synchronize, manual_seed, manual_seed_all, seed,
    get_rng_state, set_rng_state, memory_summary,
    mem_get_info, memory_allocated, max_memory_allocated, memory_reserved, max_memory_reserved,
    empty_cache, reset_peak_memory_stats, memory_stats, host_empty_cache, current_stream,
    default_stream, set_stream, stream,
    graph.graph_pool_handle, graph.is_current_stream_capturing, graph.graph_task_group_begin,
    graph.graph_task_group_end, graph.graph_task_update_begin, graph.graph_task_update_end,
)


def build_namespace() -> types.ModuleType:
    """The ``torch.npu`` module object of the simulator."""
    ns: Any = types.ModuleType("torch.npu", "Simulated torch.npu (ascend_ops.simulator); see docs/simulated-npu.md.")
    for fn in _FUNCTIONS:
        setattr(ns, fn.__name__, _api(fn))
    ns.Stream, ns.Event, ns.ExternalEvent = Stream, Event, ExternalEvent
    ns.NPUGraph, ns.graph = graph.NPUGraph, graph.graph
    ns.OutOfMemoryError = torch.OutOfMemoryError
    ns.__simulated__ = True
    ns.__spec__ = importlib.machinery.ModuleSpec("torch.npu", None, origin="ascend_ops.simulator")
    return ns


def configure(capacity_bytes: int, devices: int, fresh: bool = True) -> None:
    """Set capacity and device count; ``fresh`` also zeroes the memory counters and selects
    device 0 (first install), otherwise both are kept (a later ``install(...)`` call)."""
    if int(devices) < 1:
        raise ValueError(f"device_count must be >= 1, got {devices}")
    if fresh:
        MEMORY.configure(capacity_bytes)
        _State.device = 0
    else:
        if int(capacity_bytes) <= 0:
            raise ValueError(f"capacity_bytes must be positive, got {capacity_bytes}")
        MEMORY.capacity = int(capacity_bytes)
        _State.device = min(_State.device, int(devices) - 1)
    _State.device_count = int(devices)
