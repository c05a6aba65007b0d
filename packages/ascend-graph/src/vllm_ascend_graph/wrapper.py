# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``ACLGraphWrapper``: vLLM 0.32's static graph wrapper for Ascend.

Implements the ``AbstractStaticGraphWrapper`` protocol
(``vllm/compilation/base_static_graph.py``) with the dispatch semantics of vLLM's
``CUDAGraphWrapper`` (``vllm/compilation/cuda_graph.py``):

* the wrapper has one concrete runtime mode, FULL or PIECEWISE (vLLM's composite
  modes FULL_DECODE_ONLY / FULL_AND_PIECEWISE are realised by the runner and the
  dispatcher choosing which wrapper's mode matches a step);
* each step, the forward context carries ``cudagraph_runtime_mode`` and a
  ``BatchDescriptor``; a mismatched or NONE mode runs the runnable directly;
* otherwise there is one :class:`ACLGraphEntry` per batch descriptor: captured on first
  sight, replayed afterwards.

Inputs are persistent buffers owned by the runner (padded to the captured size);
the wrapper copies nothing. With the address check on (vLLM DEBUG logging, or
``check_input_addresses=True``) a replay whose tensor inputs moved raises.
Before each FULL replay every parameter-update hook (:mod:`vllm_ascend_graph.params`)
gets the step's real attention lengths. PIECEWISE pieces hold no attention (it is a
splitting op and runs eagerly between pieces), so no hook runs for them.

NPU mode: capture with ``ascend_ops.device.Graph`` (``torch.npu.NPUGraph``) into the
platform's global graph pool; replay with ``graph.replay()``. CPU emulation: the same
bookkeeping with a ``Graph`` that records the callable; replays execute the runnable
eagerly on the step's real inputs (CPU tensors have no graph memory pool, so eager is
the faithful equivalent of replay).
"""

from __future__ import annotations

import dataclasses
import logging
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

import torch
from vllm.compilation.counter import compilation_counter
from vllm.config import CUDAGraphMode
from vllm.forward_context import get_forward_context, is_forward_context_available
from vllm.logger import init_logger

from vllm_ascend_graph import params as _params

logger = init_logger("vllm.ascend.graph")


@dataclasses.dataclass
class ACLGraphEntry:
    """One captured graph.

    Attributes:
        batch_descriptor: the vLLM ``BatchDescriptor`` it was captured for.
        graph: the ``ascend_ops.device.Graph`` object (None until captured).
        output: the capture's output (NPU: the graph's static output tensors).
        input_addresses: ``data_ptr()`` of each tensor positional input at capture.
        num_replays: replays so far.
    """

    batch_descriptor: Any
    graph: Any | None = None
    output: Any | None = None
    input_addresses: list[int] | None = None
    num_replays: int = 0


def _tensor_addresses(args: tuple[Any, ...]) -> list[int]:
    return [x.data_ptr() for x in args if isinstance(x, torch.Tensor)]


class ACLGraphWrapper:
    """Capture/replay a runnable per batch descriptor (vLLM static graph wrapper).

    Args:
        runnable: the callable to capture (a piecewise submodule or the whole model).
        vllm_config: vLLM's ``VllmConfig``.
        runtime_mode: ``CUDAGraphMode.FULL`` or ``CUDAGraphMode.PIECEWISE``.
        cudagraph_options: vLLM's ``CUDAGraphOptions`` (accepted for interface
            compatibility; ``debug_log_enable`` controls the capture log line).
        check_input_addresses: force the replay address check on/off (default: on
            when vLLM logs at DEBUG; in emulation only for FULL graphs, whose inputs
            are the runner's persistent buffers).
        emulate: force emulation (default: ``ascend_ops.device.kind() != "npu"``).

    Raises:
        ValueError: ``runtime_mode`` is not FULL or PIECEWISE.
    """

    _all_instances: ClassVar[weakref.WeakSet[ACLGraphWrapper]] = weakref.WeakSet()

    @classmethod
    def clear_all_graphs(cls) -> None:
        """Drop the captured graphs of every live wrapper."""
        for instance in list(cls._all_instances):
            instance.clear_graphs()

    def __init__(
        self,
        runnable: Callable[..., Any],
        vllm_config: Any,
        runtime_mode: CUDAGraphMode,
        cudagraph_options: Any = None,
        *,
        check_input_addresses: bool | None = None,
        emulate: bool | None = None,
        **kwargs: Any,
    ) -> None:
        if runtime_mode not in (CUDAGraphMode.FULL, CUDAGraphMode.PIECEWISE):
            raise ValueError(
                f"runtime_mode must be CUDAGraphMode.FULL or PIECEWISE, got {runtime_mode!r}; "
                "composite modes are dispatched by the runner, NONE needs no wrapper."
            )
        from ascend_ops import device

        self.runnable = runnable
        self.vllm_config = vllm_config
        self.runtime_mode = runtime_mode
        self.compilation_config = getattr(vllm_config, "compilation_config", None)
        self.emulate = device.kind() != "npu" if emulate is None else emulate
        debug = logger.isEnabledFor(logging.DEBUG)
        if check_input_addresses is None:
            check_input_addresses = debug and (
                not self.emulate or runtime_mode == CUDAGraphMode.FULL
            )
        self.check_input_addresses = check_input_addresses
        self.debug_log_enable = getattr(cudagraph_options, "debug_log_enable", True)
        self.graph_pool = None
        if not self.emulate:
            from vllm.platforms import current_platform

            self.graph_pool = current_platform.get_global_graph_pool()
        self.entries: dict[Any, ACLGraphEntry] = {}
        ACLGraphWrapper._all_instances.add(self)

    # ---- vLLM's wrapper surface --------------------------------------------------------
    def __getattr__(self, key: str) -> Any:
        # reached only for attributes the wrapper lacks: forward to the runnable
        runnable = self.__dict__.get("runnable")
        if runnable is not None and hasattr(runnable, key):
            return getattr(runnable, key)
        raise AttributeError(f"{type(self).__name__} (and its runnable) has no attribute {key!r}")

    def unwrap(self) -> Callable[..., Any]:
        """The innermost runnable (through nested wrappers)."""
        runnable = self.runnable
        return runnable.unwrap() if hasattr(runnable, "unwrap") else runnable

    @property
    def cudagraph_wrapper(self) -> ACLGraphWrapper:
        return self

    @property
    def concrete_cudagraph_entries(self) -> dict[Any, ACLGraphEntry]:
        """vLLM's name for :attr:`entries`."""
        return self.entries

    def clear_graphs(self) -> None:
        """Forget every captured graph (they are captured again on next use)."""
        for entry in self.entries.values():
            reset = getattr(entry.graph, "reset", None)
            if reset is not None:
                reset()
        self.entries.clear()

    # ---- dispatch ----------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not is_forward_context_available():
            return self.runnable(*args, **kwargs)
        ctx = get_forward_context()
        mode = ctx.cudagraph_runtime_mode
        if mode == CUDAGraphMode.NONE or mode != self.runtime_mode:
            return self.runnable(*args, **kwargs)
        key = ctx.batch_descriptor
        if key is None:
            raise RuntimeError(
                f"{self.runtime_mode.name} graph dispatch without a batch descriptor in the "
                "forward context; the runner must set one (set_forward_context(batch_descriptor=...))."
            )
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = ACLGraphEntry(batch_descriptor=key)
        if entry.graph is None:
            return self._capture(entry, args, kwargs)
        return self._replay(entry, ctx, args, kwargs)

    def _capture(self, entry: ACLGraphEntry, args: tuple, kwargs: dict) -> Any:
        from ascend_ops import device

        if self.debug_log_enable:
            logger.debug("Capturing an ACL graph (%s, %s)", self.runtime_mode.name, entry.batch_descriptor)
        entry.input_addresses = _tensor_addresses(args)
        graph = device.Graph()
        if self.emulate:
            output = graph.capture_callable(lambda: self.runnable(*args, **kwargs))
        else:
            graph.capture_begin(pool=self.graph_pool)
            try:
                output = self.runnable(*args, **kwargs)
            finally:
                graph.capture_end()
        entry.graph = graph
        entry.output = output
        compilation_counter.num_cudagraph_captured += 1
        return output

    def _replay(self, entry: ACLGraphEntry, ctx: Any, args: tuple, kwargs: dict) -> Any:
        if self.check_input_addresses:
            now = _tensor_addresses(args)
            if now != entry.input_addresses:
                raise RuntimeError(
                    f"ACL graph replay for {entry.batch_descriptor}: tensor input addresses "
                    f"changed since capture (captured {entry.input_addresses}, got {now}). "
                    "Inputs must be the runner's persistent buffers, padded in place."
                )
        if self.runtime_mode == CUDAGraphMode.FULL and _params._hooks:
            _params.run_param_update_hooks(_params.replay_params(ctx, self.runtime_mode))
        entry.num_replays += 1
        if self.emulate:
            return self.runnable(*args, **kwargs)
        assert entry.graph is not None  # captured above before any replay
        entry.graph.replay()
        return entry.output
