# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""msModelSlim detection (options/quant_detect.py): the description file is the marker (msModelSlim's
``ascendv1_saver`` writes it and leaves config.json without a quantization_config); an explicit
``quantization`` or a config.json quantization_config is left to vLLM."""

from __future__ import annotations

from types import SimpleNamespace

from vllm_ascend_platform.options import quant_detect


def test_description_in_a_directory(tmp_path):
    assert not quant_detect.has_description(str(tmp_path))
    (tmp_path / "quant_model_description.json").write_text("{}")
    assert quant_detect.has_description(str(tmp_path))


def test_hub_id_not_in_the_cache_is_not_a_checkpoint():
    # only the local Hugging Face cache is consulted, never the network
    assert not quant_detect.has_description("someone/not-cached-model")


def _config(tmp_path, quantization=None, hf_quant=None):
    (tmp_path / "quant_model_description.json").write_text("{}")
    hf = SimpleNamespace(quantization_config=hf_quant) if hf_quant else SimpleNamespace()
    return SimpleNamespace(model_config=SimpleNamespace(
        quantization=quantization, hf_config=hf, model=str(tmp_path), revision=None))


def test_explicit_or_config_json_quantization_left_alone(tmp_path):
    cfg = _config(tmp_path, quantization="ascend")
    assert not quant_detect.detect_msmodelslim(cfg)
    cfg = _config(tmp_path, hf_quant={"quant_method": "compressed-tensors"})
    assert not quant_detect.detect_msmodelslim(cfg) and cfg.model_config.quantization is None
