# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Start-up check of compressed-tensors schemes, on configs written by the compressed-tensors
library's own presets (``preset_name_to_scheme``), the way llm-compressor writes them."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

ct = pytest.importorskip("compressed_tensors.quantization")

from vllm_ascend_platform.options.quant_compressed import (  # noqa: E402
    UnsupportedCompressedTensorsScheme,
    check_compressed_tensors,
    check_quantization_config,
)


def _config(*schemes, **extra) -> dict:
    groups = {f"group_{i}": s for i, s in enumerate(schemes)}
    return {**ct.QuantizationConfig(config_groups=groups).model_dump(), **extra}


def _preset(name: str):
    return ct.preset_name_to_scheme(name, ["Linear"])


def _static_w8a8():
    args = ct.QuantizationArgs
    return ct.QuantizationScheme(
        targets=["Linear"],
        weights=args(num_bits=8, type="int", symmetric=True, strategy="tensor"),
        input_activations=args(num_bits=8, type="int", symmetric=True, strategy="tensor",
                               dynamic=False))


@pytest.mark.parametrize("scheme", [lambda: _preset("W8A8"), lambda: _preset("INT8"),
                                    _static_w8a8])
def test_int8_w8a8_is_served(scheme):
    check_quantization_config(_config(scheme()))


@pytest.mark.parametrize("preset,said", [
    ("W8A16", "weight strategy 'group'"),
    ("W4A8", "weights 4-bit int"),
    ("W4A16", "weights 4-bit int"),
    ("W4A16_ASYM", "weights 4-bit int"),
    ("FP8", "weights 8-bit float"),
    ("FP8_DYNAMIC", "weights 8-bit float"),
    ("NVFP4", "weights 4-bit float"),
])
def test_other_presets_are_refused_naming_group_and_scheme(preset, said):
    with pytest.raises(UnsupportedCompressedTensorsScheme) as err:
        check_quantization_config(_config(_preset(preset)))
    msg = str(err.value)
    assert "--quantization compressed-tensors" in msg and "'group_0'" in msg and said in msg
    assert "Served: int8 W8A8" in msg


def test_one_bad_group_among_good_ones_is_named():
    with pytest.raises(UnsupportedCompressedTensorsScheme, match="'group_1': weights 4-bit int"):
        check_quantization_config(_config(_preset("W8A8"), _preset("W4A16")))


def test_quantized_kv_cache_is_refused():
    kv = ct.QuantizationArgs(num_bits=8, type="float", strategy="tensor").model_dump()
    with pytest.raises(UnsupportedCompressedTensorsScheme, match="kv_cache_scheme is set"):
        check_quantization_config(_config(_preset("W8A8"), kv_cache_scheme=kv))


def test_sparse_checkpoint_is_refused_and_dense_marker_is_not():
    dense = {"format": "dense", "targets": [], "sparsity_structure": "unstructured"}
    check_quantization_config(_config(_preset("W8A8"), sparsity_config=dense))
    sparse = {"format": "sparse-24-bitmask", "targets": ["Linear"]}
    with pytest.raises(UnsupportedCompressedTensorsScheme, match="sparsity_config"):
        check_quantization_config(_config(_preset("W8A8"), sparsity_config=sparse))


def _vllm_config(quantization, qcfg):
    hf = SimpleNamespace(quantization_config=qcfg)
    return SimpleNamespace(model_config=SimpleNamespace(quantization=quantization, hf_config=hf))


def test_platform_hook_checks_only_compressed_tensors():
    fp8 = _config(_preset("FP8"))
    check_compressed_tensors(_vllm_config("fp8", fp8))  # another method: not this check's job
    with pytest.raises(UnsupportedCompressedTensorsScheme):
        check_compressed_tensors(_vllm_config("compressed-tensors", fp8))
    check_compressed_tensors(_vllm_config("compressed-tensors", _config(_preset("W8A8"))))
