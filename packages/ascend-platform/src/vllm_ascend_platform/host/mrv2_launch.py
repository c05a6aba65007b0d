# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Each MRv2 step kernel's host stand-in as ONE device op on the simulated NPU.

On an NPU every Triton kernel vLLM 0.34's Model Runner V2 launches per step
(``vllm/v1/worker/gpu/input_batch.py``, ``block_table.py``, ``buffer_utils.py``) is one kernel
launch (triton-ascend). Its host stand-in (:mod:`vllm_ascend_platform.host.mrv2_kernels`) is
20-50 aten ops; on the simulated NPU each of those would go through the simulator's dispatch
mode on its own. :func:`one_launch` wraps a stand-in so that, on the simulated device, it is one
op (``ascend_ops.simulator.streams.run_kernel``): the queued work it depends on runs first, the
simulator's ledger counts one launch (``triton:<kernel>``), and its aten ops run undispatched.
The tensors it touches are declared: every tensor argument is read, the arguments named in
``writes`` are written, and a uint64 pointer table among them (``BlockTables``'s
``*_block_table_ptrs``, ``_apply_write_kernel``'s multi-group ``output_ptr``) stands for the
tensors it names (registered by ``mrv2_kernels.register_pointers``).

Anywhere else (CPU emulation, unit tests, a graph capture, fake tensors) the wrapper calls the
stand-in directly: one check of the dispatch-mode stack. Only stand-ins that read nothing back
to the host are wrapped (a host read inside the launch would no longer show as a sync).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import torch

_stack_len = torch._C._len_torch_dispatch_stack


def one_launch(name: str, writes: tuple[str, ...],
               pointer_targets: Callable[[torch.Tensor], list[torch.Tensor]],
               skip_grid: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: ``fn`` stands in for the kernel ``name``, writing the arguments ``writes``
    (parameter names of ``fn``); ``pointer_targets`` maps a uint64 pointer table to the tensors
    it names. ``skip_grid``: the first parameter is ``HostLaunch``'s grid (not a tensor argument
    of the kernel)."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        params = list(inspect.signature(fn).parameters)
        where = {w: params.index(w) for w in writes}
        label = f"triton:{name}"

        @functools.wraps(fn)
        def launch(*args: Any, **kwargs: Any) -> Any:
            if not _stack_len():  # no simulator mode (emulation): the stand-in itself
                return fn(*args, **kwargs)
            from ascend_ops.simulator.streams import run_kernel

            reads = _tensors(pointer_targets, args[1:] if skip_grid else args,
                             kwargs.values())
            written = _tensors(pointer_targets, [kwargs[w] if w in kwargs else
                                                 args[i] if i < len(args) else None
                                                 for w, i in where.items()])
            return run_kernel(label, reads, written, fn, *args, **kwargs)

        launch.__wrapped_kernel__ = fn  # type: ignore[attr-defined]
        return launch

    return wrap


def _tensors(pointer_targets: Callable[[torch.Tensor], list[torch.Tensor]],
             *groups: Any) -> list[torch.Tensor]:
    """The tensors among ``groups`` (iterables of arguments); a uint64 pointer table also
    brings the tensors it names (``pointer_targets``)."""
    out: list[torch.Tensor] = []
    for group in groups:
        for a in group:
            if isinstance(a, torch.Tensor):
                out.append(a)
                if a.dtype == torch.uint64:
                    out.extend(pointer_targets(a))
    return out
