# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Vision-encoder attention reference: bidirectional (non-causal) softmax attention within each
of the packed sequences ``cu_seqlens`` delimits, as the Qwen2-VL / Qwen2.5-VL / Qwen3-VL vision
towers run it (vLLM ``MMEncoderAttention``, vllm/model_executor/layers/attention/
mm_encoder_attention.py; transformers ``VisionAttention`` in models/qwen2_vl/modeling_qwen2_vl.py:
one attention per image / video chunk, no mask inside it).

Written for readability: one sequence at a time, float32 math (float64 stays float64).
"""

from __future__ import annotations

import torch


def encoder_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                      ends: list[int], scale: float) -> torch.Tensor:
    """query [T, Hq, D], key/value [T, Hk, D], ``ends`` the host cumulative sequence ends
    (cu_seqlens[1:]); sequence b is rows ``ends[b-1]:ends[b]``. Query head h reads key/value
    head h // (Hq // Hk). Returns [T, Hq, D] in query's dtype."""
    acc = torch.promote_types(query.dtype, torch.float32)
    group = query.shape[1] // key.shape[1]
    out = torch.zeros(query.shape, dtype=acc)
    start = 0
    for end in ends:
        if end > start:
            q = query[start:end].to(acc)                                   # [S, Hq, D]
            k = key[start:end].to(acc).repeat_interleave(group, dim=1)     # [S, Hq, D]
            v = value[start:end].to(acc).repeat_interleave(group, dim=1)
            scores = torch.einsum("qhd,khd->hqk", q, k) * scale
            probs = torch.softmax(scores, dim=-1)
            out[start:end] = torch.einsum("hqk,khd->qhd", probs, v)
        start = end
    return out.to(query.dtype)
