# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The ``device-stream-api`` patch's context manager, entered by the model runner
(model_runner_v2.py) around its construction and steps, and by the worker around graph capture;
a module of its own so that importing it does not import vLLM's runner."""

from __future__ import annotations

from typing import Any

import torch

from vllm_ascend_platform.patches.declarations import CUDA_STREAM_API


# patch: device-stream-api (declared in vllm_ascend_platform.patches.declarations; docs/architecture.md)
class device_stream_api:  # noqa: N801  (used as a context-manager function)
    """Route the CUDA stream/event API that GPUModelRunner calls to ``ascend_ops.device``.

    GPUModelRunner names ``torch.cuda.Stream``/``Event``/``current_stream``/``stream``
    and ``torch.Event`` directly (async output copies, async scheduling). For the
    duration of our runner's own calls these resolve to the device seam: torch.npu
    streams in NPU mode, host stand-ins in emulation (every op has completed when
    it returns). vLLM's CPU runner applies the same substitution around its
    constructor; it is scoped, not a lasting patch of torch. Entered around every
    ``execute_model`` and ``sample_tokens``, so it is a plain class (no generator) and
    resolves the device's API with one lookup (``ascend_ops.device.stream_api``).
    """

    _NAMES = CUDA_STREAM_API  # the names the patch's drift check looks for

    _saved: tuple[Any, list[Any]] | None = None

    # patch: device-stream-api (installs)
    def __enter__(self) -> None:
        from ascend_ops import device

        if self._saved is not None:
            raise RuntimeError("device_stream_api() is already entered; enter a new one")
        api = device.stream_api()
        cuda = torch.cuda
        self._saved = (torch.Event, [getattr(cuda, name) for name in self._NAMES])
        self._saved_set_stream = cuda.set_stream
        torch.Event = api["Event"]
        for name in self._NAMES:
            setattr(cuda, name, api[name])
        # vLLM 0.34's MRv2 also switches streams with torch.cuda.set_stream
        # (vllm/v1/worker/gpu/async_utils.py, stream()); prototype: the device's when it has one,
        # else a no-op (host stand-in streams: every op has completed when it returns)
        cuda.set_stream = api.get("set_stream", _host_set_stream)
        # vLLM 0.34's PP sampled-token relay (vllm/v1/worker/gpu/pp_utils.py, PPHandler) calls
        # Tensor.record_stream, which torch has no CPU kernel for: host tensors skip it
        self._saved_record_stream = torch.Tensor.__dict__.get("record_stream")
        torch.Tensor.record_stream = _record_stream

    # patch: device-stream-api (undoes)
    def __exit__(self, *exc: object) -> None:
        assert self._saved is not None
        (event, saved), self._saved = self._saved, None
        torch.Event = event
        for name, value in zip(self._NAMES, saved, strict=True):
            setattr(torch.cuda, name, value)
        torch.cuda.set_stream = self._saved_set_stream
        if self._saved_record_stream is None:
            del torch.Tensor.record_stream
        else:
            torch.Tensor.record_stream = self._saved_record_stream


_TENSOR_RECORD_STREAM = torch._C.TensorBase.record_stream


def _record_stream(tensor: torch.Tensor, stream: Any) -> None:
    """``Tensor.record_stream`` that skips host tensors (CPU emulation, simulated NPU): their
    memory is not handed out by a stream-ordered caching allocator, so there is no reuse to
    delay, and torch has no CPU kernel for ``aten::record_stream`` (NotImplementedError).
    Device tensors go to torch's method."""
    if tensor.device.type == "cpu":
        return
    _TENSOR_RECORD_STREAM(tensor, stream)


def _host_set_stream(stream: Any) -> None:
    """``torch.cuda.set_stream`` for host stand-in streams: nothing to switch."""
