# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Pieces of ``SpeculatorACLGraphManager`` (draft-model graphs on vLLM 0.34 Model Runner V2) in
CPU emulation: each stage's draft attention metadata reaching its replay once, the draft model
routed to the manager only while a FULL draft graph runs, draft keys apart from the target's.

End to end (EAGLE / EAGLE-3 / MTP engines with FULL_DECODE_ONLY graphs: tokens equal no
speculation) are ``tests/e2e/test_spec_decode_{eagle,mtp}.py -k graph`` and
``test_simulated_npu_mtp.py`` on vLLM 0.34."""

from __future__ import annotations

import torch


class _Speculator:
    def __init__(self):
        self.model = _Model()

    def _build_drafter_attn_metadata(self, step):
        return {"draft.0": ("prefill", step)}, {"draft.0": "slots"}

    def _build_uniform_attn_metadata(self, *, step):
        return {"draft.0": ("decode", step)}


class _Model(torch.nn.Module):
    marker = "draft attribute"

    def forward(self, input_ids=None):
        return ("eager", input_ids)


def test_draft_step_attention_keeps_each_stage_once():
    from vllm_ascend_graph.mrv2_spec_manager import DraftStepAttention

    spec = _Speculator()
    recorder = DraftStepAttention.install(spec)
    assert DraftStepAttention.install(spec) is recorder  # once per instance
    out = spec._build_drafter_attn_metadata(1)
    assert out == ({"draft.0": ("prefill", 1)}, {"draft.0": "slots"})  # returned unchanged
    spec._build_drafter_attn_metadata(2)
    spec._build_uniform_attn_metadata(step=3)
    assert recorder.take("prefill") == ({"draft.0": ("prefill", 2)}, {"draft.0": "slots"})
    assert recorder.take("decode") == ({"draft.0": ("decode", 3)}, None)
    assert recorder.take("prefill") == (None, None)  # never the same (stale) lengths twice


def test_draft_model_router_sends_only_active_full_runs_to_the_manager():
    from vllm_ascend_graph.mrv2_spec_manager import _DraftModelRouter

    class Manager:
        def _run_wrapper(self, desc, inputs):
            return ("graph", desc, inputs["input_ids"])

    spec = _Speculator()
    model = spec.model
    router = _DraftModelRouter.install(spec)
    assert spec.model is router and _DraftModelRouter.install(spec) is router
    assert router.model is model and router.marker == "draft attribute"
    assert spec.model(input_ids=1) == ("eager", 1)  # eager and warm-up steps
    router.__dict__["active"] = (Manager(), "desc")
    assert spec.model(input_ids=1) == ("graph", "desc", 1)


def test_draft_keys_differ_from_the_target_descriptor():
    from vllm.config import CUDAGraphMode
    from vllm.v1.worker.gpu.cudagraph_utils import BatchExecutionDescriptor
    from vllm_ascend_graph.mrv2_spec_manager import DraftGraphKey

    desc = BatchExecutionDescriptor(cg_mode=CUDAGraphMode.FULL, num_tokens=12, num_reqs=4)
    key = DraftGraphKey(desc, "prefill")
    assert key != desc and hash(key) == hash(DraftGraphKey(desc, "prefill"))
    assert key != DraftGraphKey(desc, "decode") and key.num_tokens == 12
