# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""What the simulator's dispatch modes share: which ops are device ops, which are host syncs,
how a captured op is frozen and re-run (``RecordedOp``), and ``tracking()`` (ledger counts of
aten ops outside a capture). The capture/replay model is described in ``graph``."""

from __future__ import annotations

import contextlib

import torch
from torch._C import DispatchKey, DispatchKeySet
from torch.utils._python_dispatch import TorchDispatchMode

from ascend_ops.simulator.host_sync_ops import sync_reason
from ascend_ops.simulator.ledger import LEDGER

aten = torch.ops.aten
_CPU = DispatchKeySet(DispatchKey.CPU)
# device ops recorded as such; collectives too (c10d in-place ones and functional ones): a replay
# re-issues them, so every rank replaying its graph runs them again in the captured order
RECORDED_NS = frozenset({"aten", "prims", "npu", "atb", "c10d", "_c10d_functional"})
NO_RERUN = frozenset({aten.empty.memory_format, aten.empty_strided.default, aten.empty_like.default,
                       aten.new_empty.default, aten.new_empty_strided.default, aten.detach.default,
                       aten.lift_fresh.default})
_COPIES = frozenset({aten.copy_.default, aten.clone.default, aten._to_copy.default})
_SYNC_OPS = {
    aten._local_scalar_dense.default: "Tensor.item()/bool()/int()/float()",
    aten.equal.default: "torch.equal",
    aten.is_nonzero.default: "bool(tensor)",
    aten.nonzero.default: "nonzero (data-dependent output shape)",
    aten.masked_select.default: "masked_select (data-dependent output shape)",
    aten._unique2.default: "unique (data-dependent output shape)",
    aten.unique_dim.default: "unique (data-dependent output shape)",
    aten.unique_consecutive.default: "unique_consecutive (data-dependent output shape)",
}


def _is_bool_index(func, args) -> bool:
    if func in (aten.index.Tensor, aten.index_put.default, aten.index_put_.default):
        return any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in args[1] or ())
    return False


def sync_name(func, args, kwargs) -> str | None:
    name = _SYNC_OPS.get(func)
    if name is None and func is aten.repeat_interleave.Tensor and kwargs.get("output_size") is None:
        name = "repeat_interleave without output_size (data-dependent output shape)"
    if name is None and _is_bool_index(func, args):
        name = "boolean-mask indexing (data-dependent output shape)"
    if name is None:  # host reads in op-plugin's NPU kernels (sources in host_sync_ops)
        name = sync_reason(func, args, kwargs)
    return name


def descend(mode, func, args, kwargs):
    """Run ``func``'s CPU kernel (a higher-order op's composite rule) with ``mode`` re-entered,
    so the ops inside reach the mode."""
    with mode:
        if isinstance(func, torch._ops.HigherOrderOperator):
            return func.dispatch(DispatchKey.CompositeExplicitAutograd, *args, **kwargs)
        return func.redispatch(_CPU, *args, **kwargs)


def descends(func) -> bool:
    return isinstance(func, torch._ops.HigherOrderOperator) or func.namespace not in RECORDED_NS


def freeze(x):
    if isinstance(x, list):
        return [freeze(v) for v in x]
    if isinstance(x, tuple):
        return tuple(freeze(v) for v in x)
    if isinstance(x, dict):
        return {k: freeze(v) for k, v in x.items()}
    return x


def flat_tensors(x) -> list:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in flat_tensors(v)]
    return []


def _name(func) -> str:
    ns = func.namespace
    base = func._schema.name.split("::", 1)[1]
    return base if ns in ("npu", "atb") else f"{ns}::{base}"


def count_launch(func, args, out) -> None:
    if func.namespace not in ("npu", "atb"):  # those count themselves in their kernel
        LEDGER.launch(_name(func))
        if func in _COPIES:
            t = out if isinstance(out, torch.Tensor) else args[0]
            LEDGER.copy(t.numel() * t.element_size())


class RecordedOp:
    """One captured op: the overload, frozen arguments and the tensors to refresh on replay."""

    __slots__ = ("func", "args", "kwargs", "outs", "name", "aliases_input")

    def __init__(self, func, args, kwargs, out):
        self.func, self.args, self.kwargs, self.name = func, freeze(args), freeze(kwargs), _name(func)
        returns = func._schema.returns
        writes = any(r.alias_info is not None and r.alias_info.is_write for r in returns)
        may_alias = any(r.alias_info is not None and not r.alias_info.is_write for r in returns)
        # in-place / out= ops and ops returning nothing write their arguments: re-run, no copy
        self.outs = None if writes or not returns else flat_tensors(out)
        # ``Tensor(a)`` returns (``to``, ``reshape``, ...) either are the input (a view: nothing
        # to replay) or a fresh tensor (functional: re-run and refresh), decided by storage
        self.aliases_input = False
        if may_alias and self.outs is not None:
            inputs = {t.untyped_storage().data_ptr() for t in flat_tensors((args, list(kwargs.values())))}
            self.aliases_input = any(t.untyped_storage().data_ptr() in inputs for t in self.outs)

    def writes(self) -> list[torch.Tensor]:
        """Tensors this op writes: its outputs, or its mutable (``Tensor(a!)``) arguments."""
        if self.outs is not None:
            return self.outs
        written = []
        for i, a in enumerate(self.func._schema.arguments):
            if a.alias_info is not None and a.alias_info.is_write:
                val = self.kwargs.get(a.name, self.args[i] if i < len(self.args) else None)
                written += flat_tensors(val)
        return written

    def closure(self):
        func, args, kwargs, outs, name = self.func, self.args, self.kwargs, self.outs, self.name
        is_aten = func.namespace in ("aten", "prims")
        if func.namespace in ("c10d", "_c10d_functional"):
            return _collective_closure(func, args, kwargs, outs, name)
        if outs is None:
            def run():
                func(*args, **kwargs)
                if is_aten:
                    LEDGER.launch(name)
            return run

        def run_and_refresh():
            res = func(*args, **kwargs)
            for dst, src in zip(outs, flat_tensors(res), strict=True):
                dst.copy_(src)
            if is_aten:
                LEDGER.launch(name)
        return run_and_refresh


def _collective_closure(func, args, kwargs, outs, name):
    """Replay of a collective: re-issue it, wait for it (``Work.wait()`` for c10d ops,
    ``wait_tensor`` for functional ones: what the Python wrappers did at capture), then refresh
    the captured outputs."""
    functional = func.namespace == "_c10d_functional" and func is not torch.ops._c10d_functional.wait_tensor.default

    def run():
        res = func(*args, **kwargs)
        items = res if isinstance(res, (list, tuple)) else [res]
        for item in items:
            if isinstance(item, torch._C.ScriptObject) and hasattr(item, "wait"):
                item.wait()
        tensors = flat_tensors(res)
        if functional:
            tensors = [torch.ops._c10d_functional.wait_tensor(t) for t in tensors]
        for dst, src in zip(outs or (), tensors, strict=False):
            if dst is not src:
                dst.copy_(src)
        LEDGER.launch(name)

    return run


@contextlib.contextmanager
def tracking():
    """Count aten launches, d2d copy bytes and host syncs outside a capture (ledger)."""
    mode = _TrackingMode()
    with mode:
        yield LEDGER


class _TrackingMode(TorchDispatchMode):
    supports_higher_order_operators = True
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if descends(func):
            return descend(self, func, args, kwargs)
        what = sync_name(func, args, kwargs)
        if what is not None:
            LEDGER.host_sync(what, depth=2)
        out = func(*args, **kwargs)
        count_launch(func, args, out)
        return out
