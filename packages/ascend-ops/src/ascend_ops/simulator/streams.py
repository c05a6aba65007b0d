# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The asynchronous simulated device: each stream is a queue that runs behind the host.

Model (``docs/simulated-npu.md``, "Asynchronous device"):

* Device work is a :class:`Work` item on a stream's queue: a graph replay, a graph task update,
  an event record / wait / reset, and any device op that touches memory that queued work writes
  (or writes memory that queued work reads): that op is queued behind it (stream order), its
  outputs allocated now from the op's meta kernel and filled when it runs. An op that touches no
  queued memory runs at once, which no program can tell from running it in order.
* Work runs only when something forces it: a stream / device / event ``synchronize``, a blocking
  host read of queued memory (``.item()``, ``.tolist()``, ``.cpu()``), an op that cannot be
  queued (data-dependent output shape, no meta kernel, another namespace), or a wait on an event
  recorded by queued work. ``Tensor.numpy()`` of queued memory is refused: a host view of device
  memory with no copy and no sync reads whatever is there.
* The schedule (``ASCEND_OPS_SIM_SCHEDULE``) decides the order of work on different streams that
  no event orders: ``in_order`` (default) runs it in issue order; ``adversarial`` runs every other
  stream's queued work before the forced stream's (the later-issued first), which is legal on the
  device and exposes a missing synchronisation as wrong values or as a reported hang; ``eager``
  runs all work at issue (the simulator before the asynchronous device; for comparisons).
* A host op that touches memory queued on another stream, with nothing ordering the two, is a
  race: under ``adversarial`` it raises :class:`SimulatedNpuError` naming the producer; under
  ``in_order`` the other stream's earlier work runs first.
* ``Event`` (torch_npu ``torch_npu/npu/streams.py``; CUDA-event semantics): ``record`` queues a
  marker, ``wait`` makes the waiting stream's later work run after that marker, ``synchronize``
  forces it, ``query`` tells whether it ran. ``ExternalEvent`` (torch_npu ``ExternalEvent``,
  Ascend/pytorch ``torch_npu/csrc/npu/Event.cpp`` @9e73e70): a flag on the device; ``record`` sets
  it, ``wait`` blocks the stream until it is set and then clears it (auto-reset), ``reset`` clears
  it. A wait that no queued record can satisfy is reported as a hang naming the event and stream
  (on the device it never returns).

Ops run while the device executes queued work see no interception (``running``).
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import deque
from collections.abc import Callable

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from ascend_ops.simulator.errors import SimulatedNpuError
from ascend_ops.simulator.ledger import LEDGER

SCHEDULES = ("in_order", "adversarial", "eager")
_seq = itertools.count(1)


def schedule() -> str:
    """The schedule from ``ASCEND_OPS_SIM_SCHEDULE`` (read per call, so tests can switch it).

    Raises:
        SimulatedNpuError: an unknown value (names the allowed ones).
    """
    value = os.environ.get("ASCEND_OPS_SIM_SCHEDULE", "in_order").strip().lower() or "in_order"
    if value not in SCHEDULES:
        raise SimulatedNpuError(
            f"ASCEND_OPS_SIM_SCHEDULE={value!r} is not a schedule; use one of {', '.join(SCHEDULES)}")
    return value


def storage_key(t: torch.Tensor) -> int | None:
    """The address of ``t``'s storage (None for tensors without one: meta, fake, sparse)."""
    if t.device.type != "cpu" or t.is_sparse or type(t) is not torch.Tensor and not isinstance(t, torch.nn.Parameter):
        return None
    try:
        return t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None


def keys_of(tensors) -> set[int]:
    out = set()
    for t in tensors:
        k = storage_key(t)
        if k:
            out.add(k)
    return out


class Work:
    """One queued item: ``run()`` executes it on the device; ``reads`` / ``writes`` are the
    storage addresses it touches (hazard tracking); ``name`` names it in errors."""

    __slots__ = ("stream", "seq", "name", "run", "reads", "writes", "done", "site", "event", "modes")

    def __init__(self, stream, name: str, run: Callable[[], None], reads=(), writes=(), site: str = "",
                 event=None):
        self.stream, self.name, self.run, self.event = stream, name, run, event
        self.reads, self.writes = set(reads), set(writes)
        self.seq = next(_seq)
        self.done = False
        # the autograd state the host issued it under (inference tensors refuse in-place updates
        # outside inference mode, so queued work runs as it would have at issue)
        self.modes = (torch.is_inference_mode_enabled(), torch.is_grad_enabled())
        self.site = site

    def __repr__(self):
        where = f" issued at {self.site}" if self.site else ""
        return f"{self.name} on {_stream_name(self.stream)}{where}"


def _stream_name(stream) -> str:
    label = getattr(stream, "label", None)
    return label or f"stream {id(stream):#x}"


class DeviceQueue:
    """Every stream's queue of this process, and the hazard maps over them."""

    def __init__(self):
        self.lock = threading.RLock()
        self.queues: dict[int, deque[Work]] = {}
        self.streams: dict[int, object] = {}
        self.writers: dict[int, Work] = {}  # storage -> latest queued writer
        self.readers: dict[int, list[Work]] = {}  # storage -> queued readers
        self.running = 0
        self._forcing: set[int] = set()
        self._executing: dict[int, Work] = {}

    # ---- queue ---------------------------------------------------------------------------
    def pending(self) -> bool:
        return any(self.queues.values())

    def enqueue(self, work: Work) -> Work:
        if schedule() == "eager":
            self._execute(work)
            return work
        with self.lock:
            sid = id(work.stream)
            self.streams[sid] = work.stream
            self.queues.setdefault(sid, deque()).append(work)
            for k in work.writes:
                self.writers[k] = work
            for k in work.reads:
                self.readers.setdefault(k, []).append(work)
        return work

    def _execute(self, work: Work) -> None:
        self.running += 1
        inference, grad = work.modes
        try:
            with torch.inference_mode(inference), torch.set_grad_enabled(grad):
                work.run()
        finally:
            self.running -= 1
            work.done = True

    def satisfy(self, event, stream) -> None:
        """A wait on ``stream`` found ``event``'s flag clear: run the first queued record of it
        (by the schedule). Raises ``SimulatedNpuError`` when none is queued (a hang)."""
        with self.lock:
            records = sorted((w for q in self.queues.values() for w in q
                              if w.event is event and w.name.endswith(".record")), key=lambda w: w.seq)
            for w in records:
                if id(w.stream) in self._executing:
                    continue  # behind the item its stream runs now: it cannot come first
                self.force(w)
                if event.flag:
                    return
        raise SimulatedNpuError(
            f"device hang: {getattr(event, 'label', event)} waited on {_stream_name(stream)} is never "
            "recorded: no record of it is queued on any stream (on the device this wait never "
            "returns; a record was consumed by an earlier wait, or is issued only after this wait "
            "on the same stream)")

    def _retire(self, work: Work) -> None:
        for k in work.writes:
            if self.writers.get(k) is work:
                del self.writers[k]
        for k in work.reads:
            lst = self.readers.get(k)
            if lst is not None:
                try:
                    lst.remove(work)
                except ValueError:
                    pass
                if not lst:
                    del self.readers[k]

    def _pop_run(self, sid: int) -> None:
        work = self.queues[sid].popleft()
        self._executing[sid] = work
        try:
            self._execute(work)
        finally:
            del self._executing[sid]
            self._retire(work)

    def force(self, work: Work) -> None:
        """Run ``work`` and everything its stream queued before it (and, by the schedule, other
        streams' work first). Raises ``SimulatedNpuError`` when ``work`` sits behind the item its
        stream is executing now (a wait on it would never return: a hang on the device)."""
        if work.done:
            return
        with self.lock:
            sid = id(work.stream)
            if sid in self._executing:
                raise SimulatedNpuError(
                    f"device hang: {self._executing[sid]!r} waits, through an event, on {work!r}, "
                    "which is queued behind it on the same stream")
            nested = sid in self._forcing  # reached while this stream's force runs other streams
            if not nested:
                self._forcing.add(sid)
            try:
                if not nested:
                    if schedule() == "adversarial":
                        # other streams race ahead: their later-issued work runs first
                        for other in list(self.queues):
                            if other != sid and other not in self._forcing:
                                self._drain_stream(other)
                    else:
                        self._run_before(work.seq, exclude=sid)
                q = self.queues.get(sid)
                while q and not work.done:
                    self._pop_run(sid)
            finally:
                if not nested:
                    self._forcing.discard(sid)

    def _run_before(self, seq: int, exclude: int) -> None:
        """in_order: other streams' work issued before ``seq`` runs first, in issue order."""
        while True:
            heads = [(q[0].seq, s) for s, q in self.queues.items()
                     if q and s != exclude and s not in self._forcing and q[0].seq < seq]
            if not heads:
                return
            _, s = min(heads)
            self._forcing.add(s)
            try:
                self._pop_run(s)
            finally:
                self._forcing.discard(s)

    def _drain_stream(self, sid: int) -> None:
        q = self.queues.get(sid)
        if q:
            self.force(q[-1])

    def drain_stream(self, stream) -> None:
        """Run everything queued on ``stream`` (``Stream.synchronize``)."""
        with self.lock:
            self._drain_stream(id(stream))

    def drain_all(self) -> None:
        """Run everything queued on every stream (``torch.npu.synchronize``)."""
        with self.lock:
            while True:
                live = [q[-1] for q in self.queues.values() if q]
                if not live:
                    return
                self.force(min(live, key=lambda w: w.seq))

    def clear(self) -> None:
        """Drop every queued item without running it (uninstall after an error)."""
        with self.lock:
            self.queues.clear()
            self.writers.clear()
            self.readers.clear()
            self._forcing.clear()
            self._executing.clear()

    # ---- hazards ---------------------------------------------------------------------------
    def conflicts(self, reads: set[int], writes: set[int]) -> list[Work]:
        """Queued work an access (``reads``, ``writes``) must come after (RAW, WAR, WAW)."""
        found = []
        for k in reads | writes:
            w = self.writers.get(k)
            if w is not None:
                found.append(w)
        for k in writes:
            found += self.readers.get(k, ())
        return found

    def settle_for_host(self, stream, reads: set[int], writes: set[int], what: str) -> None:
        """Make queued work an access on ``stream`` depends on run first. Work on ``stream``
        runs in stream order; work on another stream is a race under ``adversarial``."""
        with self.lock:
            found = self.conflicts(reads, writes)
            if not found:
                return
            q = self.queues.get(id(stream))
            if q:  # the access comes after everything queued on its stream (waits included)
                self.force(q[-1])
            rest = [w for w in self.conflicts(reads, writes) if not w.done]
            if not rest:
                return
            if schedule() == "adversarial":
                w = rest[0]
                raise SimulatedNpuError(
                    f"race: {what} on {_stream_name(stream)} touches memory that {w!r} "
                    "writes or reads, with no event or synchronize between the two streams")
            for w in sorted(rest, key=lambda w: w.seq):
                self.force(w)

    def host_read(self, t: torch.Tensor, what: str, blocking: bool) -> None:
        """A host read of ``t``: a blocking copy forces its producer (a counted host sync); a
        non-blocking view of queued memory raises ``SimulatedNpuError`` naming the producer."""
        if self.running or not self.pending():
            return
        k = storage_key(t)
        w = self.writers.get(k) if k else None
        if w is None:
            return
        if not blocking:
            raise SimulatedNpuError(
                f"host read of device memory with a pending write and no sync: {what} of a tensor "
                f"that {w!r} writes; synchronize the stream (or an event recorded after it) first")
        LEDGER.host_sync(what, depth=3)
        self.force(w)


QUEUE = DeviceQueue()


# ---- eager ops: run now, or queue behind the work they depend on ----------------------------------
_QUEUEABLE_NS = frozenset({"aten", "prims"})


def _to_meta(x):
    if isinstance(x, torch.Tensor):
        return torch.empty_strided(x.size(), x.stride(), dtype=x.dtype, device="meta")
    return x


def _writes_of(func, args, kwargs) -> list[torch.Tensor]:
    out = []
    schema = func._schema
    for i, a in enumerate(schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            val = kwargs.get(a.name, args[i] if i < len(args) else None)
            out += [t for t in pytree.tree_leaves(val) if isinstance(t, torch.Tensor)]
    return out


def _queue_op(func, args, kwargs, stream, depends: list[Work]):
    """Queue ``func`` behind ``depends`` on ``stream``; None when it cannot be queued."""
    if func.namespace not in _QUEUEABLE_NS or isinstance(func, torch._ops.HigherOrderOperator):
        return None
    returns = func._schema.returns
    if not returns or any(r.alias_info is not None and not r.alias_info.is_write for r in returns):
        return None  # views run now (they read no data); ops without results are host-facing
    if any(str(r.type) not in ("Tensor", "Tensor[]", "List[Tensor]") for r in returns):
        return None
    inputs = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    written = _writes_of(func, args, kwargs)
    if any(r.alias_info is not None for r in returns):  # in-place / out=: results are the arguments
        def run():
            func(*args, **kwargs)
        result_tensors = written
        result = None
    else:
        try:
            meta = func(*pytree.tree_map(_to_meta, args), **pytree.tree_map(_to_meta, kwargs))
        except Exception:  # no meta kernel or data-dependent: run it now instead
            return None
        result = pytree.tree_map(
            lambda m: torch.empty_strided(m.size(), m.stride(), dtype=m.dtype) if isinstance(m, torch.Tensor) else m,
            meta)
        result_tensors = [t for t in pytree.tree_leaves(result) if isinstance(t, torch.Tensor)]

        def run():
            res = func(*args, **kwargs)
            for dst, src in zip(result_tensors, [t for t in pytree.tree_leaves(res) if isinstance(t, torch.Tensor)],
                                strict=True):
                dst.copy_(src)
    QUEUE.enqueue(Work(stream, f"aten op {func._schema.name}", run,
                       reads=keys_of(inputs), writes=keys_of(result_tensors) | keys_of(written)))
    if result is None:
        # in-place / out= ops return their written argument(s)
        return written[0] if len(returns) == 1 else tuple(written[: len(returns)])
    return result


class DeviceMode(TorchDispatchMode):
    """Sees every device op issued by the host outside a capture: runs it now, or queues it behind
    the queued work it depends on (see the module docstring). An infra mode, so ``torch.compile``
    still compiles with it on the stack."""

    supports_higher_order_operators = True

    @classmethod
    def is_infra_mode(cls) -> bool:
        return True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if QUEUE.running or not QUEUE.pending():
            return func(*args, **kwargs)
        tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        if isinstance(func, torch._ops.HigherOrderOperator):
            written = tensors
        else:
            written = _writes_of(func, args, kwargs)
        reads, writes = keys_of(tensors), keys_of(written)
        with QUEUE.lock:
            found = QUEUE.conflicts(reads, writes)
            if not found:
                return func(*args, **kwargs)
            stream = current_stream()
            if schedule() != "eager" and all(w.stream is stream for w in found):
                queued = _queue_op(func, args, kwargs, stream, found)
                if queued is not None:
                    return queued
            name = getattr(func, "__name__", str(func))
            QUEUE.settle_for_host(stream, reads, writes, f"op {name}")
        return func(*args, **kwargs)


_local = threading.local()
_modes: list[DeviceMode] = []
_stream_source: list = []  # runtime registers its current_stream() here (streams imports nothing back)


def set_current_stream_source(fn) -> None:
    """Called once by ``runtime``: the function that returns this thread's current stream."""
    _stream_source[:] = [fn]


def current_stream():
    """This thread's current simulated stream (``runtime.current_stream``)."""
    return _stream_source[0]()


def ensure_mode() -> bool:
    """Put a :class:`DeviceMode` under this thread's dispatch stack if it has none (only onto an
    empty stack, so other modes keep their nesting). True if this thread has one."""
    if getattr(_local, "mode", None) is not None:
        return True
    if torch._C._len_torch_dispatch_stack() != 0:
        return False
    mode = DeviceMode()
    mode.__enter__()
    _local.mode = mode
    _modes.append(mode)
    return True


def run_kernel(name: str, reads, writes, fn: Callable, *args, **kwargs):
    """Run ``fn(*args, **kwargs)``, a host stand-in for ONE device kernel launch (a Triton kernel
    that triton-ascend compiles into a single kernel on the NPU), as one device op: the queued
    work it depends on runs first (``reads``/``writes``: every tensor the kernel reads / writes,
    the pointer-table targets included; RAW, WAR and WAW hazards as for an aten op that cannot
    be queued), the ledger counts one launch named ``name``, and the stand-in's own aten ops
    then run without :class:`DeviceMode` (one dispatch for the kernel instead of one per op).

    Only on the thread's plain device (its ``DeviceMode`` the only mode on the dispatch stack,
    no queued work running); under a graph capture, fake tensors or any other mode the ops go
    through the modes one by one, as before. Returns what ``fn`` returns."""
    mode = getattr(_local, "mode", None)
    if (mode is None or QUEUE.running or torch._C._len_torch_dispatch_stack() != 1
            or torch._C._get_dispatch_stack_at(0) is not mode):
        return fn(*args, **kwargs)
    if QUEUE.pending():
        QUEUE.settle_for_host(current_stream(), keys_of(reads), keys_of(writes),
                              f"kernel {name}")
    LEDGER.launch(name)
    popped = torch._C._pop_torch_dispatch_stack(None)
    try:
        return fn(*args, **kwargs)
    finally:
        torch._C._push_on_torch_dispatch_stack(popped)


def remove_mode() -> None:
    """Pop this thread's :class:`DeviceMode` if it is the only mode on the stack (uninstall)."""
    mode = getattr(_local, "mode", None)
    if mode is None:
        return
    if torch._C._len_torch_dispatch_stack() == 1:
        mode.__exit__(None, None, None)
    _local.mode = None


# ---- host reads (Tensor methods that read device memory on the host) ---------------------------
_HOST_READS = {"tolist": True, "cpu": True, "numpy": False, "__array__": False, "to": True}
_saved: dict[str, object] = {}


def _names_host(args, kwargs) -> bool:
    for a in (*args, kwargs.get("device")):
        if (isinstance(a, str) and a.split(":")[0] == "cpu") or (isinstance(a, torch.device) and a.type == "cpu"):
            return True
    return False


def _reader(name: str, blocking: bool, orig):
    def method(self, *args, **kwargs):
        if QUEUE.pending() and not QUEUE.running:
            if name != "to":
                QUEUE.host_read(self, f"Tensor.{name}()", blocking)
            elif _names_host(args, kwargs) and not kwargs.get("non_blocking", False):
                # a blocking device-to-host copy; a non-blocking one is read later, after an event
                QUEUE.host_read(self, "Tensor.to('cpu')", True)
        return orig(self, *args, **kwargs)

    method.__name__ = name
    return method


# patch: simulated-npu-capture-guard (declared in vllm_ascend_platform.patches; docs/architecture.md)
def patch_host_reads(on: bool) -> None:
    """Route ``Tensor.tolist/cpu/numpy/__array__`` through :meth:`DeviceQueue.host_read`."""
    if on and not _saved:
        for name, blocking in _HOST_READS.items():
            _saved[name] = getattr(torch.Tensor, name)
            setattr(torch.Tensor, name, _reader(name, blocking, _saved[name]))
    elif not on and _saved:
        for name, orig in _saved.items():
            setattr(torch.Tensor, name, orig)
        _saved.clear()


def saved_method(name: str):
    """The unpatched ``torch.Tensor`` method (the capture guard wraps what is there)."""
    return _saved.get(name, getattr(torch.Tensor, name))
