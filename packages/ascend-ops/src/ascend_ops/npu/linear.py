# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""NPU branch of the dense linear op: ``aten.linear`` on the NPU tensors (no torch_npu operator
wraps it); the CPU weight packs do not apply."""

from __future__ import annotations

import torch


def linear(x, weight, bias, handle):
    """``handle`` (a CPU pack of the native backend) does not apply here."""
    return torch.nn.functional.linear(x, weight, bias)


def pack_linear_weight(weight) -> int:
    """No pack: ``aten.linear`` reads ``weight``."""
    return -1
