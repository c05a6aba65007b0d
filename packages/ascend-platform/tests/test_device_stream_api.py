# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The ``device-stream-api`` scope around the runner's calls: torch.cuda's stream API and
torch.Event resolve to ``ascend_ops.device`` inside, are restored on exit (also on error), and
one scope object refuses to be entered twice (it would save the patched API as the original)."""

from __future__ import annotations

import pytest
import torch
from ascend_ops import device
from vllm_ascend_platform.patches.registry import patched
from vllm_ascend_platform.worker.device_stream import device_stream_api

NAMES = ("Stream", "Event", "current_stream", "stream")


def _current() -> tuple:
    return (torch.Event, *(getattr(torch.cuda, n) for n in NAMES))


def test_inside_the_scope_the_device_api_answers_and_exit_restores():
    before = _current()
    with patched("device-stream-api"):
        api = device.stream_api()
        assert torch.Event is api["Event"]
        assert all(getattr(torch.cuda, n) is api[n] for n in NAMES)
        torch.cuda.current_stream().synchronize()  # the host stand-in answers, no CUDA
    assert _current() == before


def test_exit_restores_after_an_error():
    before = _current()
    with pytest.raises(ValueError, match="boom"), device_stream_api():
        raise ValueError("boom")
    assert _current() == before


def test_one_scope_object_is_not_entered_twice():
    before = _current()
    scope = device_stream_api()
    with scope:
        with pytest.raises(RuntimeError, match="already entered"), scope:
            pass
    assert _current() == before
    with scope:  # usable again once exited
        assert torch.cuda.Stream is device.stream_api()["Stream"]
    assert _current() == before


def test_record_stream_skips_host_tensors_inside_and_is_torchs_outside():
    """vLLM 0.34's PP relay (vllm/v1/worker/gpu/pp_utils.py) calls ``Tensor.record_stream``;
    torch has no CPU kernel for it, so inside the scope a host tensor skips it; outside,
    torch's method (and its NotImplementedError for CPU tensors) is back."""
    t = torch.zeros(3)
    with patched("device-stream-api"):
        assert t.record_stream(torch.cuda.current_stream()) is None
        with device_stream_api():  # nested scopes restore in order
            t.record_stream(torch.cuda.current_stream())
        t.record_stream(torch.cuda.current_stream())
    assert "record_stream" not in torch.Tensor.__dict__
    with pytest.raises(NotImplementedError):
        t.record_stream(torch.Stream(device="cpu"))
