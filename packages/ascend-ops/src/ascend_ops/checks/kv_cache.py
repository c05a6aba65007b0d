# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""KV-cache storage-dtype rules shared by the cache write and the attention ops.

A cache holds the model's dtype, or a narrower storage dtype written by quantize-on-write and
read by dequantize-on-read (``ascend_ops/reference/kv_quant.py``, vLLM's ``kv_cache_dtype``).
"""

from __future__ import annotations

import torch

from ascend_ops.checks.tensors import FLOAT_DTYPES, float_tensor, index_tensor, same_dtype, tensor
from ascend_ops.reference.kv_quant import FP8_DTYPES

#: dtypes a KV cache may be stored in (CPU branches)
CACHE_DTYPES = (*FLOAT_DTYPES, *FP8_DTYPES)

#: why the NPU branch refuses a cache whose dtype differs from the activations'. Sources:
#: ATB ``_npu_reshape_and_cache`` (op_plugin/include/AtbOpsInterface.h; torch_npu docs) takes
#: key/value and caches of one dtype, float16/bfloat16/int8; ``npu_fused_infer_attention_score``
#: reads float16/bfloat16 caches of the query's dtype, or int8 caches with antiquant scales, on
#: Atlas A2/A3 (Ascend 910B / 910_93). Neither takes float8 caches on those SoCs.
NPU_RULE = (
    "on Atlas A2/A3 (Ascend 910B/910_93) ATB _npu_reshape_and_cache and "
    "npu_fused_infer_attention_score take K/V caches of the activations' dtype "
    "(float16/bfloat16) or int8 with antiquant scales, not float8 or a different float dtype"
)


def cache_tensor(name: str, t, ndim: int) -> None:
    tensor(name, t, ndim)
    if t.dtype not in CACHE_DTYPES:
        raise TypeError(
            f"{name} must be float32, bfloat16, float16, float8_e4m3fn or float8_e5m2, got {t.dtype}"
        )


def cache_matches(name: str, cache: torch.Tensor, ref_name: str, ref: torch.Tensor) -> None:
    """``cache`` stores ``ref``'s dtype, or a narrower one (fp8, or fp16/bf16 under float32)."""
    if cache.dtype == ref.dtype or cache.dtype in FP8_DTYPES:
        return
    if ref.dtype == torch.float32 and cache.dtype in (torch.float16, torch.bfloat16):
        return
    raise TypeError(
        f"{name} dtype {cache.dtype} cannot store {ref_name} dtype {ref.dtype}: use {ref.dtype}, "
        "float8_e4m3fn / float8_e5m2, or float16 / bfloat16 under float32"
    )


def cache_scales(act: torch.Tensor, cache: torch.Tensor, k_scale: float, v_scale: float) -> None:
    for name, s in (("k_scale", k_scale), ("v_scale", v_scale)):
        if not (s > 0 and s != float("inf")):
            raise ValueError(f"{name} must be a positive finite float, got {s}")
        if cache.dtype not in FP8_DTYPES and s != 1.0:
            raise ValueError(
                f"{name}={s} applies to float8 caches only (vLLM scales fp8 KV caches); "
                f"this cache is {cache.dtype}: pass 1.0"
            )


def npu_cache_error(op: str, cache_dtype: torch.dtype, act_dtype: torch.dtype) -> ValueError:
    return ValueError(
        f"{op}: a {cache_dtype} KV cache under {act_dtype} activations is served by the CPU "
        f"branches only; {NPU_RULE}. Allocate the cache in {act_dtype} (vLLM: --kv-cache-dtype auto)"
    )


def reshape_and_cache(key, value, key_cache, value_cache, slot_mapping) -> None:
    float_tensor("key", key, 3)
    float_tensor("value", value, 3)
    cache_tensor("key_cache", key_cache, 4)
    cache_tensor("value_cache", value_cache, 4)
    index_tensor("slot_mapping", slot_mapping, 1)
    # value may have its own head dim Dv (MLA: key = kv_c, value = k_pe, as ATB allows)
    if value.shape[:2] != key.shape[:2]:
        raise ValueError(
            f"value shape {tuple(value.shape)} must be [T, Hk, Dv] with key's T, Hk {tuple(key.shape)}"
        )
    if value_cache.shape[:3] != key_cache.shape[:3]:
        raise ValueError(
            f"value_cache shape {tuple(value_cache.shape)} must share key_cache's "
            f"[num_blocks, block_size, Hk] {tuple(key_cache.shape)}"
        )
    same_dtype("value", value, "key", key)
    same_dtype("value_cache", value_cache, "key_cache", key_cache)
    cache_matches("key_cache", key_cache, "key", key)
    if key.shape[1:] != key_cache.shape[2:]:
        raise ValueError(
            f"key shape {tuple(key.shape)} must be [T, Hk, D] matching key_cache "
            f"[num_blocks, block_size, Hk, D] = {tuple(key_cache.shape)}"
        )
    if value.shape[2] != value_cache.shape[3]:
        raise ValueError(
            f"value head dim {value.shape[2]} must equal value_cache's {value_cache.shape[3]}"
        )
    if slot_mapping.shape[0] != key.shape[0]:
        raise ValueError(
            f"slot_mapping length {slot_mapping.shape[0]} must equal the token count {key.shape[0]}"
        )


def slot_values(slot_mapping, key_cache) -> None:
    capacity = key_cache.shape[0] * key_cache.shape[1]
    if slot_mapping.numel() and int(slot_mapping.max()) >= capacity:
        raise ValueError(
            f"slot_mapping has slot {int(slot_mapping.max())} >= cache capacity {capacity} "
            "(num_blocks * block_size)"
        )
