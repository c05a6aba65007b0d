# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Refused features (``vllm_ascend_platform.options.features``): each named at start-up, with what to change.

Field names checked against vLLM 0.32's VllmConfig / ModelConfig (vllm/config/*.py).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from vllm_ascend_platform.options.features import check_features
from vllm_ascend_platform.options.refusal import UnsupportedFeatureError
from vllm_ascend_platform.startup.config import AscendConfig


def _cfg(**over):
    model = SimpleNamespace(multimodal_config=None, enable_sleep_mode=False)
    base = dict(model_config=model, lora_config=None, speculative_config=None,
                kv_transfer_config=None, ec_transfer_config=None)
    for key in ("multimodal_config", "enable_sleep_mode"):
        if key in over:
            setattr(model, key, over.pop(key))
    base.update(over)
    return SimpleNamespace(**base)


def test_plain_config_passes():
    check_features(_cfg(), AscendConfig())
    check_features(SimpleNamespace(model_config=None), AscendConfig())  # VllmConfig() default


@pytest.mark.parametrize("over,ascend,feature", [
    ({}, {"enable_weight_nz": True}, "FRACTAL_NZ"),
    # a KV connector not served on Ascend (ExampleConnector is: tests/e2e/test_kv_connector_seam.py)
    ({"kv_transfer_config": SimpleNamespace(kv_connector="NixlConnector",
                                            kv_connector_module_path=None)}, {},
     "KV connector 'NixlConnector'"),
    ({"kv_transfer_config": object()}, {}, "names no kv_connector"),
])
def test_each_feature_refused_by_name(over, ascend, feature):
    with pytest.raises(UnsupportedFeatureError, match=feature):
        check_features(_cfg(**over), AscendConfig(**ascend))


def test_language_model_only_multimodal_is_allowed():
    check_features(_cfg(multimodal_config=SimpleNamespace(language_model_only=True)), AscendConfig())


def test_multimodal_models_are_served():
    """Multimodal models run their towers on the platform's CustomOps (encoder attention and
    M-RoPE on ascend_ops; docs/multimodal.md): a multimodal config is accepted."""
    check_features(_cfg(multimodal_config=SimpleNamespace(language_model_only=False)), AscendConfig())


def test_all_refusals_listed_together():
    with pytest.raises(UnsupportedFeatureError) as err:
        check_features(_cfg(kv_transfer_config=1, ec_transfer_config=1), AscendConfig())
    assert "encoder-cache" in str(err.value) and "KV connector" in str(err.value)


def test_speculative_decoding_is_served():
    """Speculative decoding is built (n-gram, EAGLE/EAGLE-3, MTP through the runner's proposer
    hooks; docs/spec-decode.md): a speculative_config is accepted."""
    check_features(_cfg(speculative_config=object()), AscendConfig())


def test_sleep_mode_is_served():
    """Sleep mode is built (the "ascend" SleepModeBackend, vllm_ascend_platform.worker.sleep_mode)."""
    check_features(_cfg(enable_sleep_mode=True), AscendConfig())


def test_lora_is_served():
    """LoRA is built (punica wrapper in vllm_ascend_models.lora): a lora_config is accepted."""
    check_features(_cfg(lora_config=object()), AscendConfig())


def test_real_vllm_config_fields_exist():
    from vllm.config import ModelConfig, VllmConfig

    fields = set(VllmConfig.__dataclass_fields__)
    assert {"lora_config", "speculative_config", "kv_transfer_config",
            "ec_transfer_config", "additional_config"} <= fields
    assert "enable_sleep_mode" in ModelConfig.__dataclass_fields__
