# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Rotary embedding op: ``torch.ops.ascend.rotary_embedding``."""

from __future__ import annotations

import torch

from ascend_ops._dispatch import eager_direct
from ascend_ops.checks import layers as _checks
from ascend_ops.families import FAMILIES

_ROTARY = FAMILIES["rotary"]


def _rotary_impl(
    positions: torch.Tensor,
    query: torch.Tensor,
    key: torch.Tensor,
    head_size: int,
    cos_sin_cache: torch.Tensor,
    is_neox: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    _checks.rotary(positions, query, key, head_size, cos_sin_cache)
    return _ROTARY.pick("rotary_embedding", query).rotary_embedding(
        positions, query, key, head_size, cos_sin_cache, is_neox)


_rotary_op = torch.library.custom_op("ascend::rotary_embedding", mutates_args=())(_rotary_impl)


@_rotary_op.register_fake
def _(positions, query, key, head_size, cos_sin_cache, is_neox):
    _checks.rotary(positions, query, key, head_size, cos_sin_cache)
    return torch.empty_like(query), torch.empty_like(key)


def rotary_embedding(
    positions: torch.Tensor,
    query: torch.Tensor,
    key: torch.Tensor,
    head_size: int,
    cos_sin_cache: torch.Tensor,
    is_neox: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotary position embedding from a cos/sin cache (vLLM ``RotaryEmbedding`` convention).

    Shapes: ``positions`` int32/int64 [T]; ``query`` [T, Hq*head_size]; ``key`` [T, Hk*head_size]
    (any shape whose first dim is T also works; it is kept); ``cos_sin_cache``
    [max_position, rotary_dim] with row p = cat(cos[p, :rotary_dim/2], sin[p, :rotary_dim/2]).
    Only the first rotary_dim (<= head_size, even) dims of each head rotate; the rest pass through.
    ``is_neox``: True rotates halves (x[:r/2], x[r/2:r]); False rotates interleaved pairs (GPT-J).
    Returns new (query, key) of the input shapes and dtype (out of place; math in float32).
    NPU: ``torch_npu.npu_mrope(positions, query, key, cos_sin_cache, head_size,
    mrope_section=[0, 0, 0], rotary_mode="half"|"interleave")`` (out of place, this call's
    cache); a head_size off npu_mrope's alignment (32 for fp16/bf16, 16 for fp32) rotates the
    rotary slice, a rotary_dim off it runs the reference math on the device (``ascend_ops.npu.layers``).
    Raises TypeError/ValueError naming the argument; ValueError for positions outside the cache.
    """
    args = (positions, query, key, int(head_size), cos_sin_cache, bool(is_neox))
    if eager_direct(positions, query, key, cos_sin_cache):
        return _rotary_impl(*args)
    return torch.ops.ascend.rotary_embedding(*args)
