# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Tensor, dtype, shape and device checks shared by every op family's validation: errors name
the argument and what to change."""

from __future__ import annotations

import torch

FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
INDEX_DTYPES = (torch.int32, torch.int64)


def tensor(name: str, t, ndim: int | None = None) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if ndim is not None and t.dim() != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}")


def float_tensor(name: str, t, ndim: int | None = None) -> None:
    tensor(name, t, ndim)
    if t.dtype not in FLOAT_DTYPES:
        raise TypeError(
            f"{name} must be float32, bfloat16 or float16, got {t.dtype}; cast it with .to(...)"
        )


def index_tensor(name: str, t, ndim: int | None = None) -> None:
    tensor(name, t, ndim)
    if t.dtype not in INDEX_DTYPES:
        raise TypeError(f"{name} must be int32 or int64, got {t.dtype}")


def same_dtype(name: str, t: torch.Tensor, ref_name: str, ref: torch.Tensor) -> None:
    if t.dtype != ref.dtype:
        raise TypeError(f"{name} dtype {t.dtype} must equal {ref_name} dtype {ref.dtype}")


def same_device(name: str, t: torch.Tensor, ref_name: str, ref: torch.Tensor) -> None:
    if t.device != ref.device:
        raise ValueError(f"{name} is on {t.device} but {ref_name} is on {ref.device}: pass both on "
                         "one device")


def group_counts(counts: list[int], rows: int) -> None:
    """Row counts of a grouped matmul read on the host (CPU paths): each >= 0, summing to at most
    the ``rows`` of x (the C++ kernels' rule, ``csrc/moe_groups.h``)."""
    if any(c < 0 for c in counts):
        raise ValueError("group_list: row counts must be >= 0")
    if sum(counts) > rows:
        raise ValueError(f"group_list: row counts sum to {sum(counts)}, more than the {rows} rows of x")


def same_shape(name: str, t: torch.Tensor, ref_name: str, ref: torch.Tensor) -> None:
    if t.shape != ref.shape:
        raise ValueError(
            f"{name} shape {tuple(t.shape)} must equal {ref_name} shape {tuple(ref.shape)}"
        )
