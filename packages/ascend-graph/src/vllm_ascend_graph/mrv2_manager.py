# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``ACLGraphManager``: vLLM 0.34 Model Runner V2's graph manager, on ACL graphs.

vLLM 0.34's Model Runner V2 (``vllm/v1/worker/gpu/model_runner.py``) no longer wraps the model
in the platform's static graph wrapper for FULL graphs: ``ModelCudaGraphManager``
(``vllm/v1/worker/gpu/cudagraph_utils.py``) captures ``torch.cuda.CUDAGraph`` objects keyed by
``BatchExecutionDescriptor`` in ``CudaGraphManager.capture`` and replays one in
``run_fullgraph(desc)`` -- with no forward context and no attention metadata in reach. Our FULL
graphs need both: on an NPU, ``npu_fused_infer_attention_score`` bakes its host
``actual_seq_lengths`` into the captured graph, so every replay must first re-issue each
layer's attention with the step's lengths (:mod:`vllm_ascend_graph.params`; the attention
layer's hook). vllm-ascend does the same with its ``ModelAclGraphManager``
(``vllm_ascend/worker/v2/aclgraph_utils.py``: the model state keeps the step's attention
metadata, ``run_fullgraph`` updates the graph's attention parameters around ``replay()``).

This subclass keeps vLLM's descriptors, dispatch and per-descriptor input preparation
(``ModelCudaGraphManager.capture``'s forward functions) and changes three things:

* capture (:class:`_AclCaptureLoop`, vLLM's ``CudaGraphManager.capture`` order: PIECEWISE
  descriptors, then FULL; a warm-up run, then the capture with fresh attention state): a FULL
  descriptor is captured by a FULL-mode :class:`~vllm_ascend_graph.wrapper.ACLGraphWrapper`
  (``ascend_ops.device`` graphs into the platform's graph pool: ``torch.npu.NPUGraph`` on an
  NPU, the simulated ``NPUGraph`` on the simulated NPU, eager bookkeeping in CPU emulation),
  under the descriptor as the forward context's ``batch_descriptor`` -- the key the attention
  layer files its captured calls under; capture runs on a side stream of ``ascend_ops.device``
  (outside vLLM's ``GroupCoordinator.graph_capture``, which asserts a CUDA/XPU communicator for
  TP/PP/DP > 1);
* the step's attention metadata: the model state's ``prepare_attn`` is wrapped per instance
  (:class:`StepAttention`) so ``run_fullgraph`` gets what the step built;
* replay (:meth:`ACLGraphManager.run_fullgraph`): the wrapper is called under a forward
  context holding that metadata, FULL mode and the descriptor, so it runs the registered
  parameter-update hooks (``params.run_param_update_hooks``) and replays the graph (NPU,
  simulated NPU) or runs the model eagerly on the persistent input buffers (CPU emulation,
  where nothing was captured).

Not supported here (raise ``NotImplementedError`` at capture): micro-batched graphs (DBO) and
vLLM's breakable CUDA graphs (``VLLM_USE_BREAKABLE_CUDAGRAPH``), both CUDA-only.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.nn as nn
from vllm.config import CUDAGraphMode
from vllm.forward_context import get_forward_context, set_forward_context
from vllm.logger import init_logger
from vllm.v1.worker.gpu.cudagraph_utils import (
    BatchExecutionDescriptor,
    CudaGraphManager,
    ModelCudaGraphManager,
)

from vllm_ascend_graph.wrapper import ACLGraphWrapper

logger = init_logger("vllm.ascend.graph")


class StepAttention:
    """The model state's ``prepare_attn``, remembering what it returned last.

    MRv2 builds a step's attention metadata with ``model_state.prepare_attn(...)`` and, for a
    FULL step, calls ``run_fullgraph(desc)`` without it (``GPUModelRunner.execute_model``); this
    callable, installed on the model-state instance, keeps the latest result for the replay.
    """

    def __init__(self, prepare_attn: Callable[..., Any]) -> None:
        self.prepare_attn = prepare_attn
        self.metadata: Any = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.metadata = self.prepare_attn(*args, **kwargs)
        return self.metadata

    def take(self) -> Any:
        """The metadata of the latest ``prepare_attn`` call, forgotten after (a replay must
        never reuse an earlier step's lengths).

        Raises:
            RuntimeError: no ``prepare_attn`` call since the last :meth:`take`.
        """
        metadata, self.metadata = self.metadata, None
        if metadata is None:
            raise RuntimeError(
                "FULL graph replay without this step's attention metadata: the model state's "
                "prepare_attn was not called since the last replay (vllm/v1/worker/gpu/"
                "model_runner.py changed how a FULL step builds it?)")
        return metadata

    @classmethod
    def install(cls, model_state: Any) -> StepAttention:
        """Wrap ``model_state.prepare_attn`` (once per instance); returns the wrapper."""
        current = model_state.prepare_attn
        if isinstance(current, cls):
            return current
        recorder = cls(current)
        model_state.prepare_attn = recorder
        return recorder


@dataclasses.dataclass
class _Captured:
    """What a FULL descriptor's replay needs besides the graph (held by the wrapper)."""

    model_inputs: dict[str, Any]
    slot_mapping: Any
    is_padding: Any
    num_tokens_across_dp: Any


class _CaptureModel(nn.Module):
    """The model as ``ModelCudaGraphManager.capture`` calls it: while the manager captures a
    FULL descriptor, the call goes to the manager's FULL wrapper (capture under the descriptor);
    otherwise straight to the model (warm-up runs, PIECEWISE captures)."""

    def __init__(self, model: nn.Module, manager: ACLGraphManager) -> None:
        super().__init__()
        self.model = model
        # a plain attribute, not a submodule (no cycle in .modules())
        self.__dict__["_manager"] = manager

    def forward(self, **model_inputs: Any) -> Any:
        manager: ACLGraphManager = self.__dict__["_manager"]
        desc = manager._capturing
        if desc is None:
            return self.model(**model_inputs)
        return manager._capture_full(desc, model_inputs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["model"], name)


class _AclCaptureLoop(CudaGraphManager):
    """vLLM's ``CudaGraphManager.capture`` loop with FULL descriptors captured by the manager's
    ACL graph wrapper instead of ``torch.cuda.graph`` (sits below ``ModelCudaGraphManager`` in
    :class:`ACLGraphManager`'s MRO, so ``ModelCudaGraphManager.capture`` reaches it)."""

    _capturing: BatchExecutionDescriptor | None = None

    @torch.inference_mode()
    def capture(
        self,
        create_forward_fn: Any,
        progress_bar_desc: str = "Capturing ACL graphs",
        stream: Any = None,
    ) -> None:
        """Capture every descriptor of ``self._capture_descs``: PIECEWISE first, then FULL
        (``CudaGraphManager.capture``); each gets a warm-up run, FULL ones a fresh forward
        function for the capture (attention backends may change metadata in warm-up).

        Raises:
            NotImplementedError: a micro-batched (DBO) descriptor, or breakable CUDA graphs.
        """
        if self.use_breakable_cg:
            raise NotImplementedError(
                "breakable CUDA graphs (VLLM_USE_BREAKABLE_CUDAGRAPH / compilation_config."
                "use_breakable_cudagraph) are CUDA-only; use the Ascend compile backend's "
                "PIECEWISE graphs")
        with _side_stream(stream) as capture_stream:
            self.capture_stream = capture_stream
            for mode in (CUDAGraphMode.PIECEWISE, CUDAGraphMode.FULL):
                descs = self._capture_descs.get(mode, [])
                if mode == CUDAGraphMode.FULL and self._max_full_descs_to_capture is not None:
                    descs = descs[: self._max_full_descs_to_capture]
                for desc in descs:
                    if desc.num_ubatches > 1:
                        raise NotImplementedError(
                            "micro-batched (DBO) graphs are not supported on Ascend")
                    forward_fn = create_forward_fn(desc, warmup=True)
                    forward_fn(CUDAGraphMode.NONE)  # warm-up
                    if desc.cg_mode == CUDAGraphMode.PIECEWISE:
                        forward_fn(CUDAGraphMode.PIECEWISE)
                        continue
                    forward_fn = create_forward_fn(desc, warmup=False)
                    self._capturing = desc
                    try:
                        forward_fn(CUDAGraphMode.NONE)  # -> _CaptureModel -> _capture_full
                    finally:
                        self._capturing = None
        self._graphs_captured = True

    def _capture_full(self, desc: BatchExecutionDescriptor, model_inputs: dict[str, Any]) -> Any:
        raise NotImplementedError  # ACLGraphManager


@contextlib.contextmanager
def _side_stream(stream: Any = None) -> Iterator[Any]:
    """Capture on ``stream`` or a new side stream of ``ascend_ops.device`` that first waits for
    the current one (vLLM's ``graph_capture``, ``vllm/distributed/parallel_state.py``, without
    its CUDA/XPU communicator contexts)."""
    from ascend_ops import device

    side = stream if stream is not None else device.Stream()
    current = device.current_stream()
    if side is not current:
        side.wait_stream(current)
    with device.stream(side):
        yield side


class ACLGraphManager(ModelCudaGraphManager, _AclCaptureLoop):
    """``ModelCudaGraphManager`` whose FULL graphs are ACL graphs with per-replay attention
    parameter updates (module docstring). Same constructor as vLLM's; the runner builds it in
    place of ``ModelCudaGraphManager`` (``vllm_ascend_platform.worker.mrv2_graphs``).

    Attributes:
        full_wrapper: the FULL-mode ``ACLGraphWrapper`` holding one entry per captured FULL
            descriptor (``entries``: descriptor -> graph, replay count), None before capture.
        step_attention: the model state's :class:`StepAttention`, set at capture.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.full_wrapper: ACLGraphWrapper | None = None
        self.step_attention: StepAttention | None = None
        self._replays: dict[BatchExecutionDescriptor, _Captured] = {}

    def capture(self, model: nn.Module, model_state: Any, *args: Any,
                **kwargs: Any) -> None:
        """``ModelCudaGraphManager.capture`` (same arguments) through the ACL capture loop."""
        self.step_attention = StepAttention.install(model_state)
        if self.full_wrapper is None or self.full_wrapper.runnable is not model:
            self.full_wrapper = ACLGraphWrapper(model, self.vllm_config,
                                                runtime_mode=CUDAGraphMode.FULL)
        kwargs.setdefault("progress_bar_desc", "Capturing ACL graphs")
        ModelCudaGraphManager.capture(self, _CaptureModel(model, self), model_state,
                                      *args, **kwargs)

    def _capture_full(self, desc: BatchExecutionDescriptor, model_inputs: dict[str, Any]) -> Any:
        """Inside the forward context of ``desc``'s capture run: capture the model as the FULL
        wrapper's graph of ``desc`` (the descriptor becomes the context's batch descriptor, the
        attention layer's capture key) and keep what its replays need."""
        wrapper = self.full_wrapper
        assert wrapper is not None
        ctx = get_forward_context()
        saved = ctx.cudagraph_runtime_mode, ctx.batch_descriptor
        ctx.cudagraph_runtime_mode, ctx.batch_descriptor = CUDAGraphMode.FULL, desc
        try:
            output = wrapper(**model_inputs)
        finally:
            ctx.cudagraph_runtime_mode, ctx.batch_descriptor = saved
        self._replays[desc] = _Captured(
            model_inputs=dict(model_inputs), slot_mapping=ctx.slot_mapping,
            is_padding=ctx.is_padding,
            num_tokens_across_dp=getattr(ctx.dp_metadata, "num_tokens_across_dp_cpu", None))
        self.graphs[desc] = wrapper.entries[desc].graph
        return output

    def run_fullgraph(self, desc: BatchExecutionDescriptor) -> Any:
        """Replay the FULL graph of ``desc`` after the parameter-update hooks saw this step's
        attention metadata; returns the model's output for the ``desc.num_tokens`` padded rows
        (hidden states, ``(hidden, aux)`` or ``IntermediateTensors``, as the model returns).

        Raises:
            RuntimeError: ``desc`` has no captured graph (captured graphs were dropped, e.g. by
                sleep mode, and not captured again), or no attention metadata was built this step.
        """
        from vllm.model_executor.offloader.base import get_offloader

        wrapper = self.full_wrapper
        entry = wrapper.entries.get(desc) if wrapper is not None else None
        captured = self._replays.get(desc)
        if entry is None or entry.graph is None or captured is None:
            raise RuntimeError(f"no captured ACL graph for {desc}; capture the graphs again "
                               "(capture_model) after they were dropped")
        assert wrapper is not None and self.step_attention is not None
        metadata = self.step_attention.take()
        get_offloader().sync_prev_onload()
        with set_forward_context(
            metadata, self.vllm_config, num_tokens=desc.num_tokens,
            num_tokens_across_dp=captured.num_tokens_across_dp,
            cudagraph_runtime_mode=CUDAGraphMode.FULL,
            batch_descriptor=desc,
            slot_mapping=captured.slot_mapping, is_padding=captured.is_padding,
        ):
            return wrapper(**captured.model_inputs)

    def release_graphs(self) -> None:
        """vLLM's release (elastic EP), and the FULL wrapper's graphs with it."""
        super().release_graphs()
        self._replays.clear()
        if self.full_wrapper is not None:
            self.full_wrapper.clear_graphs()
