# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The KV cache's storage dtype (vLLM ``--kv-cache-dtype``) as the ascend_ops cache ops see it.

vLLM 0.32 allocates an fp8 KV cache as ``torch.uint8`` bytes (``vllm/utils/torch_utils.py``,
``STR_DTYPE_TO_TORCH_DTYPE``) and leaves the format to the kernels by the ``kv_cache_dtype``
string: "fp8" and "fp8_e4m3" are float8_e4m3fn, "fp8_e5m2" is float8_e5m2. Scales are the
attention layer's ``_k_scale_float`` / ``_v_scale_float`` (``vllm/model_executor/layers/
attention/attention.py``; 1.0 unless the checkpoint or ``calculate_kv_scales`` sets them).
"""

from __future__ import annotations

import torch

#: vLLM kv_cache_dtype string -> the float8 format its uint8 bytes hold
FP8_FORMATS: dict[str, torch.dtype] = {
    "fp8": torch.float8_e4m3fn,
    "fp8_e4m3": torch.float8_e4m3fn,
    "fp8_e5m2": torch.float8_e5m2,
}


def storage_view(kv_cache: torch.Tensor, kv_cache_dtype: str) -> torch.Tensor:
    """``kv_cache`` reinterpreted in its float8 format when vLLM allocated it as bytes.

    Same shape (both formats are one byte); other caches are returned as they are.
    Raises ValueError when an fp8 ``kv_cache_dtype`` comes with a cache that is not uint8.
    """
    fmt = FP8_FORMATS.get(kv_cache_dtype)
    if fmt is None or kv_cache.dtype == fmt:
        return kv_cache
    if kv_cache.dtype != torch.uint8:
        raise ValueError(
            f"kv_cache_dtype {kv_cache_dtype!r} expects vLLM's uint8 cache allocation, got "
            f"{kv_cache.dtype}"
        )
    return kv_cache.view(fmt)


def scales(layer: torch.nn.Module, key_cache: torch.Tensor) -> dict[str, float]:
    """``k_scale`` / ``v_scale`` keywords for the ascend_ops cache ops: the layer's float scales
    for a float8 cache, else 1.0 (vLLM applies KV scales to fp8 caches only)."""
    if key_cache.dtype not in FP8_FORMATS.values():
        return {"k_scale": 1.0, "v_scale": 1.0}
    return {
        "k_scale": float(getattr(layer, "_k_scale_float", 1.0)),
        "v_scale": float(getattr(layer, "_v_scale_float", 1.0)),
    }
