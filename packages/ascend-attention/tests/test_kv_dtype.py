# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""vLLM's fp8 KV cache as the Ascend backend reads it: uint8 bytes (vllm/utils/torch_utils.py
STR_DTYPE_TO_TORCH_DTYPE) reinterpreted per kv_cache_dtype string, scales from the layer."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from vllm.utils.torch_utils import STR_DTYPE_TO_TORCH_DTYPE
from vllm_ascend_attention import kv_dtype


@pytest.mark.parametrize("name, fmt", [("fp8", torch.float8_e4m3fn),
                                       ("fp8_e4m3", torch.float8_e4m3fn),
                                       ("fp8_e5m2", torch.float8_e5m2)])
def test_fp8_bytes_read_in_their_format(name, fmt):
    cache = torch.zeros(2, 3, 16, 8, dtype=STR_DTYPE_TO_TORCH_DTYPE[name])
    # 0x38 is 1.0 in e4m3fn (bias 7) and 0x3c is 1.0 in e5m2 (bias 15), per the OCP fp8 spec
    cache[0, 0, 0, 0] = 0x38 if fmt == torch.float8_e4m3fn else 0x3C
    view = kv_dtype.storage_view(cache, name)
    assert view.dtype == fmt and view.shape == cache.shape
    assert view[0, 0, 0, 0].float() == 1.0
    assert view.data_ptr() == cache.data_ptr()  # a view, not a copy


def test_other_caches_unchanged_and_wrong_allocation_named():
    cache = torch.zeros(2, 4)
    assert kv_dtype.storage_view(cache, "auto") is cache
    with pytest.raises(ValueError, match="kv_cache_dtype 'fp8' expects vLLM's uint8"):
        kv_dtype.storage_view(cache, "fp8")


def test_scales_only_for_fp8():
    layer = SimpleNamespace(_k_scale_float=0.5, _v_scale_float=0.25)
    assert kv_dtype.scales(layer, torch.zeros(1, dtype=torch.float8_e5m2)) == {
        "k_scale": 0.5, "v_scale": 0.25}
    assert kv_dtype.scales(layer, torch.zeros(1)) == {"k_scale": 1.0, "v_scale": 1.0}
