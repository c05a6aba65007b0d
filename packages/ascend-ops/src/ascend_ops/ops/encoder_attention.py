# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Vision-encoder attention: ``torch.ops.ascend.encoder_attention`` (non-causal attention over
variable-length packed sequences, as the Qwen2.5-VL / Qwen3-VL vision towers run it)."""

from __future__ import annotations

import torch

from ascend_ops._dispatch import eager_direct
from ascend_ops.checks import encoder_attention as _checks
from ascend_ops.families import FAMILIES

_ENCODER = FAMILIES["encoder_attention"]


def _impl(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, cu_seqlens: torch.Tensor,
          scale: float, actual_seq_lengths: list[int] | None = None) -> torch.Tensor:
    _checks.encoder_attention(query, key, value, cu_seqlens, scale)
    if actual_seq_lengths is None:
        # a device-to-host copy on the NPU (vllm-ascend reads cu_seqlens back the same way:
        # mm_encoder_attention.py _maybe_compute_cu_seqlens)
        ends = [int(v) for v in cu_seqlens[1:].tolist()]
    else:
        ends = [int(v) for v in actual_seq_lengths]
        if len(ends) != cu_seqlens.shape[0] - 1:
            raise ValueError(f"actual_seq_lengths has {len(ends)} entries, cu_seqlens describes "
                             f"{cu_seqlens.shape[0] - 1} sequences")
    # cu_seqlens' values are checked against the ends by the CPU branches (the NPU branch never
    # reads them back: no sync, so the call can be captured in a graph with host lengths)
    _checks.sequence_ends(ends, query.shape[0])
    return _ENCODER.pick("encoder_attention", query).encoder_attention(
        query, key, value, cu_seqlens, float(scale), ends)


_op = torch.library.custom_op("ascend::encoder_attention", mutates_args=())(_impl)


@_op.register_fake
def _(query, key, value, cu_seqlens, scale, actual_seq_lengths=None):
    _checks.encoder_attention(query, key, value, cu_seqlens, scale)
    return torch.empty_like(query)


def encoder_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                      cu_seqlens: torch.Tensor, scale: float, *,
                      actual_seq_lengths: list[int] | None = None) -> torch.Tensor:
    """Bidirectional attention within each packed sequence (vision-encoder self-attention).

    Layout TND: ``query`` [T, Hq, D], ``key`` / ``value`` [T, Hk, D] (Hq a multiple of Hk: GQA
    query head h reads KV head h // (Hq // Hk)), float32 / bfloat16 / float16, one dtype;
    ``cu_seqlens`` int32/int64 [B+1] cumulative sequence lengths from 0 to T (the Qwen2-VL
    vision tower's ``cu_seqlens``: one sequence per image / video frame window); sequence b is
    rows ``cu_seqlens[b]:cu_seqlens[b+1]`` and attends only to itself, without a mask. A batch
    laid out BSND [B, S, H, D] is ``x.flatten(0, 1)`` with ``cu_seqlens = arange(B + 1) * S``.
    ``scale`` multiplies the scores (usually D ** -0.5 of the unpadded head dim).
    ``actual_seq_lengths``: the host list ``cu_seqlens[1:]``; without it the ends are read
    from ``cu_seqlens`` (a device-to-host copy on the NPU).
    Returns [T, Hq, D] in query's dtype (float32 math).
    Semantics: vLLM ``MMEncoderAttention`` (vllm/model_executor/layers/attention/
    mm_encoder_attention.py), transformers Qwen2-VL ``VisionAttention``.
    NPU: ``torch_npu.npu_fused_infer_attention_score(q, k, v, input_layout="TND",
    sparse_mode=0, actual_seq_lengths=ends, actual_seq_lengths_kv=ends, ...)`` with unpaged K/V
    and vllm-ascend's head-dim padding (64 < D < 128 -> 128) (``ascend_ops.npu.encoder_attention``;
    float16/bfloat16 only). CPU: the C++ attention kernel reading K/V in place (native), or a
    per-sequence softmax (reference).
    Raises TypeError/ValueError naming the argument (dtypes, shapes, cu_seqlens not running from 0
    to T, actual_seq_lengths disagreeing with cu_seqlens).
    """
    args = (query, key, value, cu_seqlens, float(scale),
            None if actual_seq_lengths is None else [int(v) for v in actual_seq_lengths])
    if eager_direct(query, key, value, cu_seqlens):
        return _impl(*args)
    return torch.ops.ascend.encoder_attention(*args)
