# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""ACL graph capture context for the runner: vLLM's ``graph_capture`` without its CUDA-only assert.

``GPUModelRunner.capture_model`` (and its memory profiling of graphs) enter
``vllm.distributed.parallel_state.graph_capture(device)``, which walks the TP, PP and DP groups
through ``GroupCoordinator.graph_capture``. For any group with more than one rank that method
asserts the group's device communicator is a ``CudaCommunicator`` or ``XpuCommunicator`` (to
enter custom all-reduce capture contexts), so with our ``NPUCommunicator`` every TP/PP/DP > 1
engine died in graph capture (vLLM 0.33, ``parallel_state.py``). Ascend has no custom
all-reduce buffers to register: our communicator switches to the ctypes HCCL path by itself
while a stream is capturing (``NPUCommunicator._use_pyhccl``). What capture needs is the rest of
vLLM's context: a side stream that waits for the current one and is current while capturing.

:func:`capture_context` substitutes :func:`npu_graph_capture` for the name ``graph_capture`` in
``vllm.v1.worker.gpu_model_runner`` for the duration of a capture call only (scoped, like
``device_stream_api``); :func:`check_capture_target` is its drift check.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

RUNNER_MODULE = "vllm.v1.worker.gpu_model_runner"


@contextlib.contextmanager
def npu_graph_capture(device: torch.device) -> Iterator[object]:
    """Capture on a side stream of ``device`` (``ascend_ops.device.Stream``).

    Yields vLLM's ``GraphCaptureContext(stream)``; the stream first waits for the current stream
    so every initialization op has completed, and is the current stream inside the block.
    """
    from ascend_ops import device as npu
    from vllm.distributed.parallel_state import GraphCaptureContext

    stream = npu.Stream(device=device)
    current = npu.current_stream()
    if current != stream:
        stream.wait_stream(current)
    with npu.stream(stream):
        yield GraphCaptureContext(stream)


def check_capture_target() -> None:
    """Raise RuntimeError when vLLM's runner no longer captures through ``graph_capture``.

    The substitution in :func:`capture_context` only works while ``GPUModelRunner`` looks the
    name up in its module globals; if vLLM renames or moves it, fail loudly instead of capturing
    through the CUDA-only path.
    """
    import importlib

    from vllm.distributed import parallel_state

    runner = importlib.import_module(RUNNER_MODULE)
    if getattr(runner, "graph_capture", None) is not parallel_state.graph_capture:
        raise RuntimeError(
            f"{RUNNER_MODULE}.graph_capture is not vllm.distributed.parallel_state.graph_capture "
            "in this vLLM; vllm-ascend's ACL graph capture hook needs updating for it "
            "(or run with --enforce-eager)"
        )


# patch: graph-capture (declared in vllm_ascend_platform.patches.registry; docs/architecture.md)
@contextlib.contextmanager
def capture_context() -> Iterator[None]:
    """Within the block, ``GPUModelRunner`` captures through :func:`npu_graph_capture`."""
    import importlib

    check_capture_target()
    runner: Any = importlib.import_module(RUNNER_MODULE)
    saved = runner.graph_capture
    runner.graph_capture = npu_graph_capture
    try:
        yield
    finally:
        runner.graph_capture = saved
