# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Reference dense linear: y = x @ weight^T + bias (``torch.nn.functional.linear`` semantics)."""

from __future__ import annotations

import torch


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """x [..., K], weight [N, K], bias [N] or None -> [..., N]: a sum over K per output, written
    as a broadcasted product so it does not share a GEMM library with the backends it checks."""
    y = (x.unsqueeze(-2) * weight).sum(-1)
    return y if bias is None else y + bias
