# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Pieces of ``ACLGraphManager`` (vLLM 0.34 Model Runner V2) in CPU emulation: the step's
attention metadata reaching the replay, the model seen by vLLM's capture, the capture stream.

End to end (capture, replays, tokens == eager, per-replay lengths, and on the simulated NPU the
negative control without the update) are the graph tests in ``tests/e2e`` run on vLLM 0.34."""

from __future__ import annotations

import pytest
import torch


class _State:
    def __init__(self):
        self.calls = 0

    def prepare_attn(self, *args, **kwargs):
        self.calls += 1
        return {"layer.0": ("metadata", self.calls, args, kwargs)}


def test_step_attention_keeps_the_latest_metadata_once():
    from vllm_ascend_graph.mrv2_manager import StepAttention

    state = _State()
    recorder = StepAttention.install(state)
    assert StepAttention.install(state) is recorder  # once per instance
    first = state.prepare_attn(1, for_capture=True)
    assert first == {"layer.0": ("metadata", 1, (1,), {"for_capture": True})}
    second = state.prepare_attn(2)
    assert recorder.take() is second  # the latest step's, not an earlier one's
    with pytest.raises(RuntimeError, match="without this step's attention metadata"):
        recorder.take()  # never replayed twice with the same (stale) lengths


def test_capture_model_routes_full_captures_to_the_manager():
    from vllm_ascend_graph.mrv2_manager import _CaptureModel

    class Model(torch.nn.Module):
        marker = "model attribute"

        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)

        def forward(self, input_ids=None, positions=None):
            return ("eager", input_ids)

    class Manager:
        _capturing = None

        def _capture_full(self, desc, inputs):
            return ("captured", desc, inputs["input_ids"])

    manager, model = Manager(), Model()
    wrapped = _CaptureModel(model, manager)  # type: ignore[arg-type]
    assert list(wrapped.modules())[1] is model  # vLLM's has_compiled_submodule walks into it
    assert wrapped.marker == "model attribute"
    assert wrapped(input_ids=1, positions=2) == ("eager", 1)  # warm-up / PIECEWISE runs
    manager._capturing = "desc"
    assert wrapped(input_ids=1, positions=2) == ("captured", "desc", 1)


def test_capture_runs_on_a_device_side_stream():
    from ascend_ops import device
    from vllm_ascend_graph.mrv2_manager import _side_stream

    with _side_stream() as stream:
        assert isinstance(stream, device.Stream)
    given = device.Stream()
    with _side_stream(given) as stream:
        assert stream is given
