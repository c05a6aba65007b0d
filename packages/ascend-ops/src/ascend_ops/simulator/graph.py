# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Simulated NPU graphs: capture records device ops, replay re-runs them on current contents.

Model (``docs/simulated-npu.md``; API of ``torch_npu/npu/graphs.py``):

* ``NPUGraph.capture_begin`` pushes ``CaptureMode`` (a TorchDispatchMode). Each aten / ``npu::`` /
  ``atb::`` / collective (``c10d::``, ``_c10d_functional::``) op is executed and recorded with its
  arguments: tensors by identity, host values
  (ints, floats, lists such as ``actual_seq_lengths``) copied, so they stay as captured. Ops of
  other namespaces (``ascend::``, vLLM's custom ops) are descended into: their CPU kernel runs
  with the mode re-entered, so the ops inside are what gets recorded.
* ``replay()`` queues the replay on the current stream (``streams``: the device runs it when
  something forces it); running, it re-runs the recorded ops in order; a functional op's results are copied into the
  tensors it returned at capture (later ops read those by identity). Ops whose result shares an
  input's storage (views; ``to``/``reshape`` returning their input) and ``aten.empty*`` are not
  re-run; a ``Tensor(a)`` op that returned a fresh tensor (``to(dtype)``) is, like a functional
  op; in-place and ``out=`` ops write their captured arguments again.
* ``graph_task_group_begin/end(stream)`` around captured ops make a task group (the end returns
  its handle). Between ``graph_task_update_begin(stream, handle)`` and ``graph_task_update_end``
  the ``npu::``/``atb::`` calls are recorded, not executed; ``graph_task_update_end`` queues the
  replacement on the update stream, and from when that stream runs it, every replay uses it;
  each must write (``.out`` overload) tensors the group wrote at capture.
* ``ExternalEvent`` record / wait / reset issued during a capture become graph tasks (``EventOp``)
  that run at each replay.
* Host syncs inside a capture raise ``SimulatedNpuError`` naming the call: ``.item()``/``bool()``/
  ``int()``/``float()`` and ``torch.equal`` (seen as ops), ``.tolist()``/``.cpu()``/``.numpy()``/``.to("cpu")``
  (Tensor methods patched for the duration of the capture), ``torch.npu.synchronize()``, and ops
  with data-dependent output shapes (``nonzero``, boolean-mask indexing, ``masked_select``,
  ``unique``, ``repeat_interleave`` without ``output_size``).
"""

from __future__ import annotations

import contextlib
import threading

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ascend_ops.simulator import constraints, streams
from ascend_ops.simulator.errors import SimulatedNpuError
from ascend_ops.simulator.ledger import LEDGER, _caller, record_call
from ascend_ops.simulator.recording import (
    NO_RERUN,
    RecordedOp,
    count_launch,
    descend,
    descends,
    flat_tensors,
    sync_name,
)

_lock = threading.Lock()
_capturing: CaptureMode | None = None


def host_sync(what: str) -> None:
    """A host-device sync: SimulatedNpuError inside a capture, else counted in the ledger."""
    if _capturing is not None:
        file, line = _caller(2)
        raise SimulatedNpuError(f"host sync inside NPU graph capture: {what} at {file}:{line}")
    LEDGER.host_sync(what, depth=2)


class TaskGroup:
    """Handle returned by ``graph_task_group_end``: ops [start, end) of one graph."""

    def __init__(self, graph: NPUGraph, start: int, end: int):
        self.graph, self.start, self.end = graph, start, end
        self.replacement: list[Task] | None = None

    def written(self) -> set[int]:
        ops = self.graph._ops[self.start:self.end]
        return {t.data_ptr() for op in ops for t in op.writes()}


class EventOp:
    """An ``ExternalEvent`` record / wait / reset captured into a graph: a task run at each replay."""

    __slots__ = ("name", "run", "event")

    def __init__(self, name: str, event, run):
        self.name, self.event, self.run = name, event, run

    def writes(self) -> list:
        return []

    def reads(self) -> list:
        return []

    def closure(self):
        return self.run


#: one task of a captured graph: a recorded device op or a captured event op
Task = RecordedOp | EventOp


def capture_event_op(name: str, event, run) -> bool:
    """Inside a capture, append an event task to the capturing graph (True); else False."""
    if _capturing is None:
        return False
    _capturing.graph._ops.append(EventOp(name, event, run))
    return True


class CaptureMode(TorchDispatchMode):
    """Records (and executes) every device op; descends into other namespaces and into
    higher-order ops (e.g. ``auto_functionalized`` in compiled graphs)."""

    supports_higher_order_operators = True

    def __init__(self, graph: NPUGraph):
        super().__init__()
        self.graph = graph

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if descends(func):
            return descend(self, func, args, kwargs)
        what = sync_name(func, args, kwargs)
        if what is not None:
            file, line = _caller(2)
            raise SimulatedNpuError(f"host sync inside NPU graph capture: {what} at {file}:{line}")
        if self.graph._group_start is not None:  # an updatable task: FIA needs its workspace
            constraints.check_graph_workspace(func, args, kwargs)
        out = func(*args, **kwargs)
        count_launch(func, args, out)
        if func not in NO_RERUN:  # views are dropped by RecordedOp.aliases_input
            op = RecordedOp(func, args, kwargs, out)
            if not op.aliases_input:
                self.graph._ops.append(op)
        return out


class UpdateMode(TorchDispatchMode):
    """Between graph_task_update_begin/end: npu/atb calls are recorded, not executed."""

    supports_higher_order_operators = True

    def __init__(self, group: TaskGroup):
        super().__init__()
        self.group = group
        self.ops: list = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if descends(func):
            return descend(self, func, args, kwargs)
        if func.namespace in ("npu", "atb"):
            op = RecordedOp(func, args, kwargs, None)
            if op.outs is not None:
                raise SimulatedNpuError(
                    f"graph_task_update: {op.name} is not an out= overload; the re-issued call must "
                    "write the captured outputs (e.g. npu_fused_infer_attention_score.out(..., out=[...]))")
            constraints.check_graph_workspace(func, args, kwargs)
            self.ops.append(op)
            returns = func._schema.returns
            if not returns:
                return None
            written = op.writes()  # out= overloads return their (written) out arguments
            return tuple(written[: len(returns)]) if len(returns) != 1 else written[0]
        return func(*args, **kwargs)


_PATCHED = ("tolist", "cpu", "numpy", "to")
_originals: dict[str, object] = {}


def _to_host(args, kwargs) -> bool:
    """``Tensor.to(...)`` arguments that name the host: a device-to-host copy (simulated device
    tensors are CPU tensors, so torch returns them as they are and no op reaches the mode)."""
    for a in (*args, kwargs.get("device")):
        if isinstance(a, str) and a.split(":")[0] == "cpu":
            return True
        if isinstance(a, torch.device) and a.type == "cpu":
            return True
    return False


def _guarded(name, orig):
    def method(self, *args, **kwargs):
        if name == "to" and not _to_host(args, kwargs):
            return orig(self, *args, **kwargs)
        if _capturing is not None and torch._C._len_torch_dispatch_stack() > 0:
            file, line = _caller(2)
            what = "Tensor.to('cpu')" if name == "to" else f"Tensor.{name}()"
            raise SimulatedNpuError(f"host sync inside NPU graph capture: {what} at {file}:{line}")
        return orig(self, *args, **kwargs)

    method.__name__ = name
    return method


# patch: simulated-npu-capture-guard (declared in vllm_ascend_platform.patches; docs/architecture.md)
def _patch_tensor_methods(on: bool) -> None:
    if on:
        for name in _PATCHED:
            _originals[name] = getattr(torch.Tensor, name)  # may be streams' host-read wrapper
            setattr(torch.Tensor, name, _guarded(name, _originals[name]))
    else:
        for name, orig in _originals.items():
            setattr(torch.Tensor, name, orig)
        _originals.clear()


class NPUGraph:
    """``torch.npu.NPUGraph`` of the simulator (see module docstring)."""

    def __init__(self):
        record_call(2)  # constructing torch.npu.NPUGraph() is a call site too
        self._ops: list[Task] = []
        self._groups: list[TaskGroup] = []
        self._plan: list = []
        self._mode: CaptureMode | None = None
        self._pool = object()
        self._group_start: int | None = None
        self._reads: set[int] = set()
        self._writes: set[int] = set()

    def capture_begin(self, pool=None, capture_error_mode: str = "global") -> None:
        global _capturing
        # the simulator executes ops during capture (for their outputs), so queued work runs first
        # (torch_npu's ``graph.__enter__`` synchronizes the device before capturing too)
        streams.QUEUE.drain_all()
        with _lock:
            if _capturing is not None:
                raise SimulatedNpuError("capture_begin: another NPU graph capture is already underway")
            self.reset()
            self._mode = CaptureMode(self)
            _capturing = self._mode
        if pool is not None:
            self._pool = pool
        _patch_tensor_methods(True)
        self._mode.__enter__()

    def capture_end(self) -> None:
        global _capturing
        if self._mode is None or _capturing is not self._mode:
            raise SimulatedNpuError("capture_end: this graph is not capturing")
        try:
            self._mode.__exit__(None, None, None)
        finally:
            _patch_tensor_methods(False)
            _capturing, self._mode = None, None
        self._rebuild()

    def _rebuild(self) -> None:
        ops: list[Task] = []
        pos = 0
        for g in sorted(self._groups, key=lambda g: g.start):
            ops += self._ops[pos:g.start]
            ops += g.replacement if g.replacement is not None else self._ops[g.start:g.end]
            pos = g.end
        ops += self._ops[pos:]
        self._plan = [op.closure() for op in ops]
        reads, writes = set(), set()
        for op in ops:
            writes |= streams.keys_of(op.writes())
            reads |= streams.keys_of(_tensors_of(op))
        self._reads, self._writes = reads, writes

    def replay(self) -> None:
        """Queue a replay on the current stream: when the device runs it, it re-runs the captured
        ops (with the task-group replacements applied by then) on the tensors' contents then."""
        if _capturing is not None:
            raise SimulatedNpuError("replay: cannot replay an NPU graph while a capture is underway")
        if getattr(_update, "mode", None) is not None:
            raise SimulatedNpuError("replay: a graph task update is open (call graph_task_update_end first)")
        def run():
            plan = self._plan  # as the device finds it: updates that ran before this replay count
            for task in plan:
                task()
            LEDGER.replays += 1
            LEDGER.replayed_ops += len(plan)

        file, line = _caller(2)
        streams.QUEUE.enqueue(streams.Work(streams.current_stream(), f"NPUGraph.replay({id(self):#x})", run,
                                           reads=self._reads, writes=self._writes, site=f"{file}:{line}"))

    def reset(self) -> None:
        self._ops, self._groups, self._plan = [], [], []

    def pool(self):
        return self._pool

    def recorded_ops(self) -> list[str]:
        """Names of the ops a replay runs, in order (for tests and debugging)."""
        return [op.name for op in self._replay_ops()]

    def _replay_ops(self) -> list[Task]:
        out, pos = [], 0
        for g in sorted(self._groups, key=lambda g: g.start):
            out += self._ops[pos:g.start] + (g.replacement if g.replacement is not None else self._ops[g.start:g.end])
            pos = g.end
        return out + self._ops[pos:]


def graph_pool_handle():
    return object()


def is_current_stream_capturing() -> bool:
    return _capturing is not None


def graph_task_group_begin(stream) -> None:
    if _capturing is None:
        raise SimulatedNpuError("graph_task_group_begin: only valid inside an NPU graph capture")
    g = _capturing.graph
    if g._group_start is not None:
        raise SimulatedNpuError("graph_task_group_begin: a task group is already open")
    g._group_start = len(g._ops)


def graph_task_group_end(stream) -> TaskGroup:
    if _capturing is None or _capturing.graph._group_start is None:
        raise SimulatedNpuError("graph_task_group_end: no task group open (call graph_task_group_begin first)")
    g = _capturing.graph
    start = g._group_start
    assert start is not None  # checked above
    group = TaskGroup(g, start, len(g._ops))
    g._group_start = None
    g._groups.append(group)
    return group


_update = threading.local()


def graph_task_update_begin(stream, handle) -> None:
    if not isinstance(handle, TaskGroup):
        raise SimulatedNpuError(f"graph_task_update_begin: handle must come from graph_task_group_end, got {handle!r}")
    if _capturing is not None:
        raise SimulatedNpuError("graph_task_update_begin: not allowed during a capture")
    if getattr(_update, "mode", None) is not None:
        raise SimulatedNpuError("graph_task_update_begin: an update is already open")
    if handle not in handle.graph._groups:
        raise SimulatedNpuError("graph_task_update_begin: stale handle (its graph was reset or re-captured)")
    _update.mode = UpdateMode(handle)
    _update.mode.__enter__()


def abandon_update() -> None:
    """Close a task update left open by an error in this thread (uninstall), recording nothing."""
    mode = getattr(_update, "mode", None)
    if mode is not None:
        _update.mode = None
        try:
            mode.__exit__(None, None, None)
        except Exception:  # noqa: BLE001 - not on top of the stack any more: nothing to pop
            pass


def graph_task_update_end(stream) -> None:
    mode = getattr(_update, "mode", None)
    if mode is None:
        raise SimulatedNpuError("graph_task_update_end: no update open (call graph_task_update_begin first)")
    mode.__exit__(None, None, None)
    _update.mode = None
    group = mode.group
    allowed = group.written()
    for op in mode.ops:
        if not {t.data_ptr() for t in op.writes()} <= allowed:
            raise SimulatedNpuError(
                f"graph_task_update: {op.name} writes tensors the task group did not write at capture; "
                "pass the captured output tensors")
    ops = mode.ops

    def apply():
        group.replacement = ops
        group.graph._rebuild()

    # the update reaches the graph's task when ``stream`` runs it, not when the host issues it
    file, line = _caller(2)
    what = group.graph._ops[group.start].name if group.end > group.start else "empty group"
    streams.QUEUE.enqueue(streams.Work(stream if stream is not None else _current_stream(),
                                       f"graph_task_update({what})", apply, site=f"{file}:{line}"))


def _current_stream():
    return streams.current_stream()


def _tensors_of(op) -> list:
    if isinstance(op, EventOp):
        return []
    return flat_tensors((op.args, list(op.kwargs.values())))


class graph:
    """``torch.npu.graph(npu_graph, pool=None, stream=None, ...)``: capture inside the block."""

    def __init__(self, npu_graph: NPUGraph, pool=None, stream=None, auto_dispatch_capture=False,
                 capture_error_mode: str = "global"):
        record_call(2)
        self.npu_graph, self.pool, self.stream = npu_graph, pool, stream
        self._stream_ctx = contextlib.nullcontext()

    def __enter__(self):
        # as torch_npu's graph.__enter__: synchronize, empty the cache, switch to the stream
        torch.npu.synchronize()
        torch.npu.empty_cache()
        self._stream_ctx = torch.npu.stream(self.stream) if self.stream is not None else contextlib.nullcontext()
        self._stream_ctx.__enter__()
        self.npu_graph.capture_begin(self.pool)
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self.npu_graph.capture_end()
        finally:
            self._stream_ctx.__exit__(exc_type, exc, tb)
        return False
