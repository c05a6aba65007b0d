# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``SpeculatorACLGraphManager``: the draft model's FULL graphs on vLLM 0.34 Model Runner V2.

vLLM 0.34's autoregressive speculators (EAGLE, EAGLE-3, MTP: ``vllm/v1/worker/gpu/spec_decode/
target_dependent_ar/speculator.py``, ``autoregressive/speculator.py``) build two
``SpeculatorCudaGraphManager`` objects (``spec_decode/autoregressive/cudagraph_utils.py``): one
for the draft prefill (uniform ``1 + k``-token verification batches, the target's decode query
lengths) and one for the draft decode steps (one token per request). With a FULL graph mode each
captures the speculator's whole step function (``_prefill`` / ``_decode`` /
``_fused_multi_step_decode``: draft forward, draft sampling, buffer updates) into a
``torch.cuda.CUDAGraph`` and ``run_fullgraph(desc)`` replays it -- again without the step's
attention metadata, which our FIA needs before every replay (``vllm_ascend_graph.params``).
vllm-ascend replaces the same class with its ``EagleAclGraphManager``
(``vllm_ascend/worker/v2/spec_decode/eagle/aclgraph.py``: rebuilds the draft attention metadata
and updates the draft graph's attention parameters in ``run_fullgraph``).

Ours keeps vLLM's descriptors, dispatch and capture inputs (``SpeculatorCudaGraphManager.
capture``) and, as :class:`~vllm_ascend_graph.mrv2_manager.ACLGraphManager` does for the target:

* capture (``_AclCaptureLoop``): the FULL descriptor's step function runs once with the draft
  model routed (:class:`_DraftModelRouter`, installed as the speculator's ``model``) to a
  FULL-mode :class:`~vllm_ascend_graph.wrapper.ACLGraphWrapper`, so only the draft *model* is
  a graph (keyed by :class:`DraftGraphKey`: the descriptor plus the stage, so the draft's
  captured attention calls never share a key with the target's identical descriptor); the
  step function's arguments are kept;
* the step's attention metadata: the speculator's ``_build_drafter_attn_metadata`` (prefill) and
  ``_build_uniform_attn_metadata`` (decode steps) are wrapped per instance
  (:class:`DraftStepAttention`) and the replay takes the latest result of its stage;
* replay (:meth:`SpeculatorACLGraphManager.run_fullgraph`): the step function runs again with
  the captured arguments and this step's metadata; the draft model call inside it goes to the
  wrapper under FULL mode and the draft key, which runs the parameter-update hooks and replays
  the graph (NPU, simulated NPU) or runs the model eagerly (CPU emulation). Sampling and the
  buffer updates around the model run eagerly (they were inside vLLM's CUDA graph).

The draft wrappers carry ``graph_role = "draft"`` (the target's FULL wrapper has none), so
graph facts about the target (capture sizes are multiples of ``1 + k``) can leave them out.

Not supported (``NotImplementedError`` at capture): a step function that is not a bound method
of the speculator, and what ``_AclCaptureLoop`` refuses (DBO, breakable CUDA graphs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch.nn as nn
from vllm.config import CUDAGraphMode
from vllm.forward_context import get_forward_context
from vllm.logger import init_logger
from vllm.v1.worker.gpu.cudagraph_utils import BatchExecutionDescriptor
from vllm.v1.worker.gpu.spec_decode.autoregressive.cudagraph_utils import SpeculatorCudaGraphManager

from vllm_ascend_graph.mrv2_manager import _AclCaptureLoop
from vllm_ascend_graph.wrapper import ACLGraphWrapper

logger = init_logger("vllm.ascend.graph")

#: speculator method -> stage whose metadata it builds (vLLM 0.34 names)
_METADATA_BUILDERS = {"_build_drafter_attn_metadata": "prefill",
                      "_build_uniform_attn_metadata": "decode"}


@dataclasses.dataclass(frozen=True)
class DraftGraphKey:
    """The forward context's ``batch_descriptor`` for a draft graph: vLLM's descriptor and the
    stage (``"prefill"``: uniform ``1 + k`` verification batch; ``"decode"``: one token per
    request). Hashable; ``num_tokens`` is the descriptor's."""

    desc: BatchExecutionDescriptor
    stage: str

    @property
    def num_tokens(self) -> int:
        return self.desc.num_tokens


class DraftStepAttention:
    """The speculator's draft attention-metadata builders, remembering each stage's last result.

    ``_build_drafter_attn_metadata`` returns ``(attn_metadata, slot_mappings)``;
    ``_build_uniform_attn_metadata`` returns ``attn_metadata`` (vLLM 0.34,
    ``spec_decode/speculator.py``); both are kept per stage.
    """

    def __init__(self) -> None:
        self.metadata: dict[str, Any] = {}

    def take(self, stage: str) -> tuple[Any, Any]:
        """``(attn_metadata, slot_mappings or None)`` built for ``stage`` since the last take,
        or ``(None, None)`` (forgotten after: a replay never reuses an earlier step's lengths)."""
        return self.metadata.pop(stage, (None, None))

    @classmethod
    def install(cls, speculator: Any) -> DraftStepAttention:
        """Wrap the speculator's builders (once per instance); returns the recorder."""
        existing = speculator.__dict__.get("_ascend_draft_step_attention")
        if existing is not None:
            return existing
        recorder = cls()
        for name, stage in _METADATA_BUILDERS.items():
            build = getattr(speculator, name, None)
            if build is None:
                continue

            def recording(*args: Any, _build: Callable[..., Any] = build, _stage: str = stage,
                          **kwargs: Any) -> Any:
                out = _build(*args, **kwargs)
                recorder.metadata[_stage] = out if isinstance(out, tuple) else (out, None)
                return out

            setattr(speculator, name, recording)
        speculator.__dict__["_ascend_draft_step_attention"] = recorder
        return recorder


class _DraftModelRouter(nn.Module):
    """The draft model as the speculator calls it (``_run_model``): while a draft manager
    captures or replays a FULL descriptor, the call goes to that manager's wrapper under the
    draft key; otherwise straight to the model (eager and warm-up steps)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.__dict__["active"] = None  # (manager, desc) while a FULL draft graph runs

    def forward(self, **model_inputs: Any) -> Any:
        active = self.__dict__["active"]
        if active is None:
            return self.model(**model_inputs)
        manager, desc = active
        return manager._run_wrapper(desc, model_inputs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["model"], name)

    @classmethod
    def install(cls, speculator: Any) -> _DraftModelRouter:
        current = speculator.model
        if isinstance(current, cls):
            return current
        router = cls(current)
        speculator.model = router
        return router


@dataclasses.dataclass
class _StepCall:
    """The step function's arguments at capture (replayed with this step's metadata)."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]


class SpeculatorACLGraphManager(SpeculatorCudaGraphManager, _AclCaptureLoop):
    """``SpeculatorCudaGraphManager`` whose FULL graphs are ACL graphs of the draft model with
    per-replay attention parameter updates (module docstring). Same constructor as vLLM's; the
    speculator builds it in place of ``SpeculatorCudaGraphManager``
    (``vllm_ascend_platform.worker.mrv2_graphs``).

    Attributes:
        full_wrapper: the FULL-mode ``ACLGraphWrapper`` of the draft model (``graph_role``
            ``"draft"``), None before capture.
        stage: ``"prefill"`` (query length ``1 + k``) or ``"decode"`` (query length 1).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stage = "decode" if self.decode_query_len == 1 else "prefill"
        self.full_wrapper: ACLGraphWrapper | None = None
        self._speculator: Any = None
        self._step_fn: Callable[..., Any] | None = None
        self._calls: dict[BatchExecutionDescriptor, _StepCall] = {}

    def capture(self, forward_fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """``SpeculatorCudaGraphManager.capture`` (same arguments) through the ACL capture loop.

        Raises:
            NotImplementedError: ``forward_fn`` is not a bound method of the speculator.
        """
        speculator = getattr(forward_fn, "__self__", None)
        if speculator is None or not hasattr(speculator, "model"):
            raise NotImplementedError(
                "draft FULL graphs need the speculator's own step function (a bound method, "
                "vllm/v1/worker/gpu/spec_decode/autoregressive/speculator.py capture())")
        self._speculator = speculator
        self._step_fn = forward_fn
        DraftStepAttention.install(speculator)
        router = _DraftModelRouter.install(speculator)
        if self.full_wrapper is None or self.full_wrapper.runnable is not router.model:
            self.full_wrapper = ACLGraphWrapper(router.model, self.vllm_config,
                                                runtime_mode=CUDAGraphMode.FULL)
            self.full_wrapper.__dict__["graph_role"] = "draft"

        def recording_fn(*fn_args: Any, **fn_kwargs: Any) -> Any:
            desc = self._capturing
            if desc is None:
                return forward_fn(*fn_args, **fn_kwargs)
            self._calls[desc] = _StepCall(fn_args, dict(fn_kwargs))
            router.__dict__["active"] = (self, desc)
            try:
                return forward_fn(*fn_args, **fn_kwargs)
            finally:
                router.__dict__["active"] = None

        kwargs.setdefault("progress_bar_desc", f"Capturing draft {self.stage} ACL graphs")
        SpeculatorCudaGraphManager.capture(self, recording_fn, *args, **kwargs)

    def _capture_full(self, desc: BatchExecutionDescriptor, model_inputs: dict[str, Any]) -> Any:
        # not reached: the router sends the model call to _run_wrapper
        return self._run_wrapper(desc, model_inputs)

    def _run_wrapper(self, desc: BatchExecutionDescriptor, model_inputs: dict[str, Any]) -> Any:
        """Inside the step function's forward context: run the draft model as the FULL
        wrapper's graph of ``desc`` (capture on first use, replay after)."""
        wrapper = self.full_wrapper
        assert wrapper is not None
        key = DraftGraphKey(desc, self.stage)
        ctx = get_forward_context()
        saved = ctx.cudagraph_runtime_mode, ctx.batch_descriptor
        ctx.cudagraph_runtime_mode, ctx.batch_descriptor = CUDAGraphMode.FULL, key
        try:
            output = wrapper(**model_inputs)
        finally:
            ctx.cudagraph_runtime_mode, ctx.batch_descriptor = saved
        if desc not in self.graphs:
            self.graphs[desc] = wrapper.entries[key].graph
        return output

    def run_fullgraph(self, desc: BatchExecutionDescriptor) -> None:
        """Run the draft step of ``desc``: the captured step function with this step's draft
        attention metadata, its model call replayed from the ACL graph (after the attention
        parameter update). Returns None, as vLLM's replay (results land in the speculator's
        buffers).

        Raises:
            RuntimeError: ``desc`` has no captured graph (dropped and not captured again).
        """
        call = self._calls.get(desc)
        wrapper = self.full_wrapper
        if call is None or wrapper is None or DraftGraphKey(desc, self.stage) not in wrapper.entries:
            raise RuntimeError(f"no captured draft ACL graph for {desc}; capture the graphs "
                               "again (capture_model) after they were dropped")
        speculator = self._speculator
        recorder = DraftStepAttention.install(speculator)
        metadata, slot_mappings = recorder.take(self.stage)
        args = list(call.args)  # (num_reqs, num_tokens, attn_metadata, slot_mappings, ...)
        if metadata is not None:
            args[2] = metadata
            if slot_mappings is not None:
                args[3] = slot_mappings
        else:
            # a dummy step that skipped attention (vLLM replays the graph on whatever the
            # persistent buffers hold): the capture's metadata, over the same buffers
            logger.debug("draft %s replay of %s without step metadata (dummy step)",
                         self.stage, desc)
        router = _DraftModelRouter.install(speculator)
        router.__dict__["active"] = (self, desc)
        try:
            assert self._step_fn is not None
            self._step_fn(*args, **call.kwargs)
        finally:
            router.__dict__["active"] = None

    def release_graphs(self) -> None:
        """vLLM's release, and the draft wrapper's graphs with it."""
        super().release_graphs()
        self._calls.clear()
        if self.full_wrapper is not None:
            self.full_wrapper.clear_graphs()
