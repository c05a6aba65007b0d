# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Multimodal rotary embedding op (M-RoPE of Qwen2-VL / Qwen2.5-VL / Qwen3-VL):
``torch.ops.ascend.mrope``."""

from __future__ import annotations

import torch

from ascend_ops._dispatch import eager_direct
from ascend_ops.checks import mrope as _checks
from ascend_ops.families import FAMILIES

_MROPE = FAMILIES["mrope"]


def _mrope_impl(positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor, head_size: int,
                cos_sin_cache: torch.Tensor, mrope_section: list[int], interleaved: bool,
                is_neox: bool) -> tuple[torch.Tensor, torch.Tensor]:
    _checks.mrope(positions, query, key, head_size, cos_sin_cache, mrope_section)
    return _MROPE.pick("mrope", query).mrope(positions, query, key, head_size, cos_sin_cache,
                                             list(mrope_section), interleaved, is_neox)


_mrope_op = torch.library.custom_op("ascend::mrope", mutates_args=())(_mrope_impl)


@_mrope_op.register_fake
def _(positions, query, key, head_size, cos_sin_cache, mrope_section, interleaved, is_neox):
    _checks.mrope(positions, query, key, head_size, cos_sin_cache, mrope_section)
    return torch.empty_like(query), torch.empty_like(key)


def mrope(positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor, head_size: int,
          cos_sin_cache: torch.Tensor, mrope_section: list[int], *, interleaved: bool = False,
          is_neox: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Multimodal rotary position embedding (M-RoPE) from a cos/sin cache.

    Shapes: ``positions`` int32/int64 [3, T] (temporal, height, width position ids; text tokens
    carry one id three times); ``query`` [T, Hq*head_size]; ``key`` [T, Hk*head_size] (any shape
    whose first dim is T works; it is kept); ``cos_sin_cache`` [max_position, rotary_dim], row p
    = cat(cos(p * f), sin(p * f)) over the rotary_dim / 2 frequencies f (vLLM's cache).
    ``mrope_section``: 3 ints summing to rotary_dim / 2. Sectioned (Qwen2-VL, Qwen2.5-VL:
    [16, 24, 24]): frequencies ``[0, s0)`` take position row 0, ``[s0, s0+s1)`` row 1, the rest
    row 2. ``interleaved=True`` (Qwen3-VL: [24, 20, 20]): frequency f takes row 1 when
    ``f % 3 == 1 and f < 3*s1``, row 2 when ``f % 3 == 2 and f < 3*s2``, else row 0.
    Each head's first rotary_dim dims then rotate like ``rotary_embedding`` (``is_neox``: halves,
    as the Qwen VL models; False: GPT-J pairs); the rest pass through.
    Returns new (query, key) of the input shapes and dtype (out of place; math in float32).
    Semantics: vLLM ``MRotaryEmbedding`` (vllm/model_executor/layers/rotary_embedding/mrope.py),
    transformers ``Qwen2VLRotaryEmbedding`` / ``Qwen3VLTextRotaryEmbedding``.
    NPU: ``torch_npu.npu_mrope(positions, query, key, cos_sin_cache, head_size,
    mrope_section=..., rotary_mode="half"|"interleave", cache_mode="default"|"interleave")`` for the
    section lists and alignments the operator documents, else aten ops on the device
    (``ascend_ops.npu.mrope``). CPU: the merged table gathered per token, then the C++ rotary
    kernel (native) or plain torch (reference).
    Raises TypeError/ValueError naming the argument; ValueError for positions outside the cache
    (CPU branches).
    """
    args = (positions, query, key, int(head_size), cos_sin_cache, [int(s) for s in mrope_section],
            bool(interleaved), bool(is_neox))
    if eager_direct(positions, query, key, cos_sin_cache):
        return _mrope_impl(*args)
    return torch.ops.ascend.mrope(*args)
