# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Scaled KV-cache storage: quantize on write, dequantize on read (reference math).

Semantics of vLLM's quantized KV cache (``vllm/_custom_ops.py`` ``reshape_and_cache*`` with
``kv_cache_dtype`` "fp8" / "fp8_e4m3" / "fp8_e5m2", the CUDA ``fp8::scaled_convert`` in
``csrc/quantization/fp8``): a value ``x`` is stored as ``saturate(x / scale)`` in the cache dtype
(saturated to the largest finite value of the format, never inf/NaN) and read back as
``stored.float() * scale``, with one float ``scale`` per layer for K (``k_scale``) and one for V
(``v_scale``), 1.0 when the checkpoint carries none. Float16/bfloat16 caches under a wider model
dtype are a plain cast (the scales must then be 1.0: vLLM applies them to fp8 caches only).
"""

from __future__ import annotations

import torch

#: 8-bit float storage formats of a KV cache (vLLM's "fp8" is e4m3)
FP8_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)


def quantize(x: torch.Tensor, cache_dtype: torch.dtype, scale: float) -> torch.Tensor:
    """``x`` (any float dtype) as stored in a ``cache_dtype`` cache: fp8 -> saturate(x / scale)."""
    if cache_dtype in FP8_DTYPES:
        limit = torch.finfo(cache_dtype).max
        return (x.float() / scale).clamp(-limit, limit).to(cache_dtype)
    return x.to(cache_dtype)


def dequantize(stored: torch.Tensor, dtype: torch.dtype, scale: float) -> torch.Tensor:
    """Cache contents read back in ``dtype``: fp8 -> stored * scale; other dtypes a cast."""
    if stored.dtype in FP8_DTYPES:
        return (stored.float() * scale).to(dtype)
    return stored.to(dtype)
