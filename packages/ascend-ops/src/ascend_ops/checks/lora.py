# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Argument validation of the LoRA ops (shapes only: no check reads device values, so the ops
stay valid inside a captured graph). Errors name the argument and what to change."""

from __future__ import annotations

import torch

from ascend_ops.checks.tensors import float_tensor, index_tensor


def _weight(name: str, w) -> tuple[int, int, int]:
    """(slots, rows, cols) of a stacked LoRA weight [slots, 1, rows, cols] or [slots, rows, cols]."""
    float_tensor(name, w)
    if w.dim() == 4 and w.shape[1] == 1:
        return w.shape[0], w.shape[2], w.shape[3]
    if w.dim() == 3:
        return tuple(w.shape)
    raise ValueError(
        f"{name} must be vLLM's stacked LoRA weight [slots, 1, rows, cols] or [slots, rows, cols], "
        f"got shape {tuple(w.shape)}"
    )


def _indices(indices, x: torch.Tensor) -> None:
    if indices is None:
        return
    index_tensor("indices", indices, 1)
    if indices.shape[0] < x.shape[0]:
        raise ValueError(
            f"indices has {indices.shape[0]} entries but x has {x.shape[0]} rows; pass one adapter "
            "index per token (-1 for none)"
        )


def shrink(x, lora_a, indices, out) -> None:
    float_tensor("x", x, 2)
    float_tensor("out", out, 2)
    _slots, rank, hidden = _weight("lora_a", lora_a)
    if hidden != x.shape[1]:
        raise ValueError(f"lora_a in_features {hidden} must equal x.shape[1] = {x.shape[1]}")
    if out.shape[0] != x.shape[0] or out.shape[1] < rank:
        raise ValueError(
            f"out must be [{x.shape[0]}, >= {rank}] (tokens x LoRA rank), got {tuple(out.shape)}"
        )
    _indices(indices, x)


def expand(x, lora_b, indices, y, y_offset: int, y_slice_size: int) -> None:
    float_tensor("x", x, 2)
    float_tensor("y", y, 2)
    _slots, out_features, rank = _weight("lora_b", lora_b)
    if x.shape[1] < rank:
        raise ValueError(f"x.shape[1] = {x.shape[1]} must be >= the LoRA rank {rank} of lora_b")
    if y.shape[0] != x.shape[0]:
        raise ValueError(f"y has {y.shape[0]} rows but x has {x.shape[0]}; they must match")
    _slice(y, y_offset, y_slice_size, out_features)
    _indices(indices, x)


def _slice(y, y_offset: int, y_slice_size: int, out_features: int) -> None:
    if y_offset < 0 or y_slice_size < 0 or y_offset + y_slice_size > y.shape[1]:
        raise ValueError(
            f"y_offset={y_offset}, y_slice_size={y_slice_size} leave y's {y.shape[1]} columns; "
            "pass a slice inside y"
        )
    if y_slice_size > out_features:
        raise ValueError(
            f"y_slice_size={y_slice_size} exceeds lora_b's out_features {out_features}"
        )


def linear(y, x, lora_a, lora_b, indices, y_offset: int, y_slice_size: int) -> None:
    float_tensor("y", y, 2)
    float_tensor("x", x, 2)
    slots_a, rank_a, hidden = _weight("lora_a", lora_a)
    slots_b, out_features, rank_b = _weight("lora_b", lora_b)
    if hidden != x.shape[1]:
        raise ValueError(f"lora_a in_features {hidden} must equal x.shape[1] = {x.shape[1]}")
    if (slots_a, rank_a) != (slots_b, rank_b):
        raise ValueError(
            f"lora_a [{slots_a} slots, rank {rank_a}] and lora_b [{slots_b} slots, rank {rank_b}] "
            "must have the same slots and rank"
        )
    if y.shape[0] != x.shape[0]:
        raise ValueError(f"y has {y.shape[0]} rows but x has {x.shape[0]}; they must match")
    _slice(y, y_offset, y_slice_size, out_features)
    _indices(indices, x)


def segments(x, seg_lens, seg_lora, num_tokens: int) -> None:
    index_tensor("seg_lens", seg_lens, 1)
    index_tensor("seg_lora", seg_lora, 1)
    if seg_lens.shape != seg_lora.shape:
        raise ValueError(
            f"seg_lens {tuple(seg_lens.shape)} and seg_lora {tuple(seg_lora.shape)} must have one "
            "entry per segment"
        )
    if not 0 <= num_tokens <= x.shape[0]:
        raise ValueError(
            f"num_tokens={num_tokens} (the segments' total) must be in [0, {x.shape[0]}] (x rows)"
        )
