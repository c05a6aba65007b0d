# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Rotary position embedding reference: vLLM's cos_sin_cache convention, which is also
``torch_npu.npu_mrope``'s RoPE mode (op-plugin docs/zh/custom_APIs/torch_npu/torch_npu-npu_mrope.md:
each head's first rotary_dim dims rotate, the rest pass through). Not ATB
``_npu_rotary_embedding``'s, whose head width is the table width (see ascend_ops.simulator)."""

from __future__ import annotations

import torch


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, is_neox: bool) -> torch.Tensor:
    # x: [T, H, R]; cos/sin: [T, 1, R/2]
    if is_neox:
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
    return out.flatten(-2)


def _apply(x: torch.Tensor, head_size: int, cos, sin, is_neox: bool) -> torch.Tensor:
    acc = torch.promote_types(x.dtype, torch.float32)
    t = x.shape[0]
    xh = x.reshape(t, -1, head_size).to(acc)
    rot = cos.shape[-1] * 2
    rotated = _rotate(xh[..., :rot], cos, sin, is_neox)
    out = torch.cat((rotated, xh[..., rot:]), dim=-1)
    return out.reshape(x.shape).to(x.dtype)


def rotary_embedding(
    positions: torch.Tensor,
    query: torch.Tensor,
    key: torch.Tensor,
    head_size: int,
    cos_sin_cache: torch.Tensor,
    is_neox: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotate the first rotary_dim = cos_sin_cache.shape[-1] dims of every head (out of place)."""
    acc = torch.promote_types(query.dtype, torch.float32)
    cs = cos_sin_cache.index_select(0, positions.reshape(-1).long()).to(acc)
    half = cs.shape[-1] // 2
    cos = cs[:, None, :half]
    sin = cs[:, None, half:]
    return (
        _apply(query, head_size, cos, sin, is_neox),
        _apply(key, head_size, cos, sin, is_neox),
    )
