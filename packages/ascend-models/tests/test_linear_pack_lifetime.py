# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The packed copy of a linear weight (ascend_ops' registry) lives as long as its layer: an
engine torn down in the same process must not keep every pack it made, and a weight reload
must not leave the old pack behind."""

from __future__ import annotations

import gc

import pytest
import torch
from ascend_ops.native import linear as _native_linear
from vllm_ascend_models.linear import NO_PACK, _pack


def test_pack_is_released_with_its_layer_and_on_repack():
    base = _native_linear.pack_count()
    layer = torch.nn.Linear(64, 32, bias=False)
    _pack(layer)
    if layer.ascend_linear_handle == NO_PACK:
        pytest.skip("no oneDNN packing for float32 on this CPU")
    assert _native_linear.pack_count() == base + 1
    first = layer.ascend_linear_handle
    _pack(layer)  # a weight reload packs again
    assert layer.ascend_linear_handle != first
    assert _native_linear.pack_count() == base + 1
    del layer
    gc.collect()
    assert _native_linear.pack_count() == base
