# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""What every constraint module shares: the half-precision dtypes and the rule helpers, which
raise ``SimulatedNpuError("<operator>: <rule>")``."""

from __future__ import annotations

import torch

from ascend_ops.simulator.errors import SimulatedNpuError

HALF = (torch.float16, torch.bfloat16)


def _need(ok: bool, op: str, rule: str) -> None:
    if not ok:
        raise SimulatedNpuError(f"{op}: {rule}")


def _dtype(t: torch.Tensor, allowed, op: str, arg: str) -> None:
    names = "/".join(str(d).replace("torch.", "") for d in allowed)
    _need(t.dtype in allowed, op, f"{arg} must be {names}, got {str(t.dtype).replace('torch.', '')}")


def _contig(t: torch.Tensor | None, op: str, arg: str) -> None:
    if t is not None:
        _need(t.is_contiguous(), op, f"{arg} must be contiguous (non-contiguous tensors are not supported)")
