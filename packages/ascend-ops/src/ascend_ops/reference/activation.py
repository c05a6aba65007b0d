# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""SwiGLU reference (semantics of torch_npu.npu_swiglu(x, dim=-1) and vLLM SiluAndMul)."""

from __future__ import annotations

import torch


def swiglu(x: torch.Tensor) -> torch.Tensor:
    """silu(x[..., :I]) * x[..., I:] for x of shape [..., 2I], computed in float32, returned in x.dtype."""
    acc = torch.promote_types(x.dtype, torch.float32)
    half = x.shape[-1] // 2
    gate = x[..., :half].to(acc)
    up = x[..., half:].to(acc)
    return (torch.nn.functional.silu(gate) * up).to(x.dtype)
