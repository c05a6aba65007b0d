# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Paged KV-cache write op: ``torch.ops.ascend.reshape_and_cache``."""

from __future__ import annotations

import torch

from ascend_ops._dispatch import eager_direct
from ascend_ops.checks import kv_cache as _checks_kv
from ascend_ops.families import FAMILIES

_KV_CACHE = FAMILIES["kv_cache"]


def _reshape_and_cache_impl(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    k_scale: float = 1.0,
    v_scale: float = 1.0,
) -> None:
    _checks_kv.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping)
    _checks_kv.cache_scales(key, key_cache, k_scale, v_scale)
    # a cache stored in another dtype is quantized on write on the CPU branches
    # (reference/kv_quant.py) and refused by the NPU branch (checks/kv_cache.py NPU_RULE)
    _KV_CACHE.pick("reshape_and_cache", key).reshape_and_cache(
        key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale)


_reshape_and_cache_op = torch.library.custom_op(
    "ascend::reshape_and_cache", mutates_args=("key_cache", "value_cache")
)(_reshape_and_cache_impl)


@_reshape_and_cache_op.register_fake
def _(key, value, key_cache, value_cache, slot_mapping, k_scale=1.0, v_scale=1.0):
    _checks_kv.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping)


def reshape_and_cache(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    *,
    k_scale: float = 1.0,
    v_scale: float = 1.0,
) -> None:
    """Scatter this step's K/V into the paged cache, in place.

    Shapes: ``key`` [T, Hk, D], ``value`` [T, Hk, Dv]; ``key_cache`` [num_blocks, block_size, Hk, D],
    ``value_cache`` [num_blocks, block_size, Hk, Dv] (Dv may differ from D, e.g. MLA's latent and
    rope caches; the C++ kernel serves Dv == D, the reference the rest), same dtype as key/value;
    CPU branches accept strided views, the NPU branch needs contiguous caches (ValueError
    otherwise); ``slot_mapping`` int32/int64
    [T]. Quantized / narrower caches: ``key_cache``/``value_cache`` may instead be float8_e4m3fn
    or float8_e5m2 (vLLM's ``kv_cache_dtype`` "fp8"/"fp8_e4m3" and "fp8_e5m2", stored as
    ``saturate(key / k_scale)`` and ``saturate(value / v_scale)``, see
    ``ascend_ops/reference/kv_quant.py``) or float16/bfloat16 under a float32 key (a cast; the
    scales must be 1.0). CPU branches only: the NPU branch raises ValueError naming the SoC rule
    (ATB ``_npu_reshape_and_cache`` takes key and caches of one dtype, fp16/bf16/int8).
    Token t goes to block slot // block_size, offset slot % block_size; slot < 0 is padding
    and is skipped.
    NPU: ATB ``torch_npu._npu_reshape_and_cache(key, value, key_cache, value_cache, slot_indices)``.
    Raises ValueError naming ``slot_mapping`` for a slot >= num_blocks * block_size (CPU
    branches; nothing is written), TypeError/ValueError naming the argument for dtype/shape mismatches.
    """
    scales = (float(k_scale), float(v_scale))
    if eager_direct(key, value, key_cache, value_cache, slot_mapping):
        _reshape_and_cache_impl(key, value, key_cache, value_cache, slot_mapping, *scales)
    else:
        torch.ops.ascend.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping, *scales)
