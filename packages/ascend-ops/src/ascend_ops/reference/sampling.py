# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Greedy-sampling reference: ``torch.argmax(logits, dim=-1)`` semantics written without argmax
(the first maximal index per row; NaN counts as the largest value)."""

from __future__ import annotations

import torch


def greedy_argmax(logits: torch.Tensor) -> torch.Tensor:
    x = logits.float()
    nan = torch.isnan(x)
    best = torch.where(nan.any(-1, keepdim=True), nan, x == x.amax(-1, keepdim=True))
    index = torch.arange(x.shape[-1], device=x.device).expand_as(x)
    return torch.where(best, index, x.shape[-1]).amin(-1)
