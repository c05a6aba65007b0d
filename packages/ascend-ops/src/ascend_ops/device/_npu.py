"""Device runtime over ``torch.npu`` (registered by torch_npu)."""

from __future__ import annotations

import sys

import torch


def available() -> bool:
    """True when torch_npu is already imported and reports a visible NPU."""
    if "torch_npu" not in sys.modules:
        return False
    npu = getattr(torch, "npu", None)
    try:
        return bool(npu is not None and npu.is_available())
    except Exception:
        return False


def current_device():
    return torch.device("npu", torch.npu.current_device())


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
    }
    if name in table:
        return getattr(torch.npu, table[name])
    raise AttributeError(name)
