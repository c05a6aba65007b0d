# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Multimodal rotary position embedding (M-RoPE) reference, vLLM's ``MRotaryEmbedding``
convention (``vllm/model_executor/layers/rotary_embedding/mrope.py``), which is also
``torch_npu.npu_mrope``'s MRoPE mode (op-plugin docs/zh/custom_APIs/torch_npu/
torch_npu-npu_mrope.md@09fca6f).

Qwen2-VL (arXiv 2409.12191, section 2.1) gives each token three position ids (temporal, height,
width; text tokens repeat one id three times). The rotary frequencies are split into three
sections (``mrope_section``, summing to rotary_dim / 2): section i takes its cos/sin from the
cache row of position id i. Qwen3-VL interleaves the sections instead (frequency f comes from
the height ids when f % 3 == 1 and f < 3 * section[1], from the width ids when f % 3 == 2 and
f < 3 * section[2], else from the temporal ids). The merged per-token cos/sin then rotate every
head as plain RoPE does (``reference.rotary``).
"""

from __future__ import annotations

import torch

from ascend_ops.reference.rotary import rotary_embedding


def _merge(parts: torch.Tensor, mrope_section: list[int], interleaved: bool) -> torch.Tensor:
    """[3, T, half] per-position-row frequencies -> [T, half] per-token frequencies."""
    half = parts.shape[-1]
    f = torch.arange(half, device=parts.device)
    if interleaved:
        height = (f % 3 == 1) & (f < 3 * mrope_section[1])
        width = (f % 3 == 2) & (f < 3 * mrope_section[2])
        row = torch.where(height, 1, torch.where(width, 2, 0))
    else:
        row = torch.repeat_interleave(torch.arange(3, device=parts.device),
                                      torch.tensor(mrope_section, device=parts.device))
    return parts.gather(0, row.view(1, 1, half).expand(1, parts.shape[1], half)).squeeze(0)


def mrope_cos_sin(positions: torch.Tensor, cos_sin_cache: torch.Tensor, mrope_section: list[int],
                  interleaved: bool) -> torch.Tensor:
    """The per-token merged table [T, rotary_dim] = cat(cos, sin) that M-RoPE rotates with:
    row t is the cache row a plain RoPE would use, with each frequency taken from the position
    row (temporal / height / width) its section assigns. Values are the cache's (no arithmetic)."""
    rows = cos_sin_cache.index_select(0, positions.reshape(-1).long()).view(3, positions.shape[1], -1)
    cos, sin = rows.chunk(2, dim=-1)
    return torch.cat((_merge(cos, mrope_section, interleaved),
                      _merge(sin, mrope_section, interleaved)), dim=-1)


def mrope(positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor, head_size: int,
          cos_sin_cache: torch.Tensor, mrope_section: list[int], interleaved: bool,
          is_neox: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotate the first rotary_dim dims of every head of query [T, Hq*D] and key [T, Hk*D] by the
    merged M-RoPE table (out of place, float32 math); positions [3, T]."""
    table = mrope_cos_sin(positions, cos_sin_cache, mrope_section, interleaved)
    token = torch.arange(positions.shape[1], device=positions.device)
    return rotary_embedding(token, query, key, head_size, table, is_neox)
