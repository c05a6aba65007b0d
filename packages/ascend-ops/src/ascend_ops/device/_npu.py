# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Device runtime over ``torch.npu`` (registered by torch_npu, or by ``ascend_ops.simulator``).

With the simulated NPU (``torch.npu.is_simulated()``), tensors live on the CPU, so
``current_device()`` is ``torch.device("cpu")``; everything else goes to ``torch.npu`` as on an NPU.
"""

from __future__ import annotations

import sys

import torch


def available() -> bool:
    """True when torch_npu is already imported and reports a visible NPU."""
    if "torch_npu" not in sys.modules:
        return False
    if getattr(torch, "npu", None) is None:
        return False
    try:
        return bool(torch.npu.is_available())
    except Exception:
        return False


def load():
    try:
        import torch_npu  # noqa: F401  (registers torch.npu)
    except Exception as exc:  # ImportError, or OSError from missing CANN libraries
        raise RuntimeError(
            f"torch_npu failed to import ({type(exc).__name__}: {exc}); install CANN and the "
            "torch_npu build matching torch and source CANN's set_env.sh; without an NPU, keep "
            "tensors on cpu (native/reference kernels)"
        ) from exc
    return sys.modules["torch_npu"]


def hccl_process_group_cls():
    if simulated():
        raise RuntimeError(
            "the simulated NPU has no HCCL (ProcessGroupHCCL); collectives run on gloo in "
            "simulated-NPU mode (docs/simulated-npu.md)"
        )
    from torch_npu._C._distributed_c10d import ProcessGroupHCCL

    return ProcessGroupHCCL


def set_device(device) -> None:
    torch.npu.set_device(device)


def device_count() -> int:
    return int(torch.npu.device_count())


def get_device_name(index: int = 0) -> str:
    return str(torch.npu.get_device_name(index))


def manual_seed_all(seed: int) -> None:
    torch.npu.manual_seed_all(seed)


def is_capturing() -> bool:
    return bool(torch.npu.is_current_stream_capturing())


def simulated() -> bool:
    """True when torch.npu is ascend_ops' simulator."""
    return bool(getattr(torch.npu, "is_simulated", lambda: False)())


def current_device():
    index = torch.npu.current_device()
    return torch.device("cpu") if simulated() else torch.device("npu", index)


def graph_task_group_begin(stream) -> None:
    torch.npu.graph_task_group_begin(stream)


def graph_task_group_end(stream):
    return torch.npu.graph_task_group_end(stream)


def graph_task_update_begin(stream, handle) -> None:
    torch.npu.graph_task_update_begin(stream, handle)


def graph_task_update_end(stream) -> None:
    torch.npu.graph_task_update_end(stream)


def synchronize(device=None) -> None:
    torch.npu.synchronize(device)


def mem_get_info(device=None) -> tuple[int, int]:
    free, total = torch.npu.mem_get_info(device)
    return int(free), int(total)


def __getattr__(name: str):
    table = {
        "Stream": "Stream",
        "Event": "Event",
        "Graph": "NPUGraph",
        "stream": "stream",
        "current_stream": "current_stream",
        "ExternalEvent": "ExternalEvent",
    }
    if name in table:
        return getattr(torch.npu, table[name])
    raise AttributeError(name)
