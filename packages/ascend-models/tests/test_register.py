# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""register(): idempotence, what it registers, conflicts; the configure hook (custom_ops); the
layer's description. The vLLM version check is the platform's (one check for every layer)."""

from __future__ import annotations

import logging

import pytest
import vllm_ascend_models
from vllm import ir
from vllm.model_executor.custom_op import op_registry, op_registry_oot
from vllm_ascend_models import _custom_ops

# The upstream CustomOp classes Llama/Qwen2/Qwen3 use and vLLM's registered names for them
# (vllm/model_executor/layers/activation.py and rotary_embedding/base.py, vLLM 0.32).
EXPECTED_SLOTS = {
    "SiluAndMul": "silu_and_mul",
    "RotaryEmbedding": "rotary_embedding",
    "Llama3RotaryEmbedding": "rotary_embedding",
    "YaRNScalingRotaryEmbedding": "rotary_embedding",
    # multimodal towers and M-RoPE (mm_encoder_attention.py, rotary_embedding/mrope.py, 0.34)
    "MMEncoderAttention": "mm_encoder_attn",
    "MRotaryEmbedding": "rotary_embedding",
}


def _snapshot():
    return (
        dict(op_registry_oot),
        dict(ir.ops.rms_norm.impls),
        dict(ir.ops.fused_add_rms_norm.impls),
    )


def test_register_is_idempotent():
    assert vllm_ascend_models.is_registered()
    before = _snapshot()
    vllm_ascend_models.register()
    vllm_ascend_models.register()
    assert _snapshot() == before
    # Also idempotent below the process-wide flag (the pieces check vLLM's registries).
    assert _custom_ops.register_custom_ops() == []
    from vllm_ascend_models import ir_kernels

    ir_kernels.register_ir_kernels()
    assert _snapshot() == before


def test_slots_hold_our_classes_under_upstream_names():
    for slot, custom_ops_name in EXPECTED_SLOTS.items():
        ours = op_registry_oot[slot]
        assert ours.__module__.startswith("vllm_ascend_models.")
        assert ours.__mro__[1].__name__ == slot or ours.__mro__[2].__name__ == slot
        # custom_ops directives use the name vLLM registered the upstream op under.
        assert ours.name == custom_ops_name
        assert custom_ops_name in op_registry


def test_conflicting_plugin_is_an_error(monkeypatch):
    class OtherPluginSiluAndMul:
        pass

    monkeypatch.setitem(op_registry_oot, "SiluAndMul", OtherPluginSiluAndMul)
    with pytest.raises(RuntimeError, match="SiluAndMul.*already replaced"):
        _custom_ops.register_custom_ops()


def test_description_publishes_resolvable_names():
    from vllm.utils.import_utils import resolve_obj_by_qualname

    layer = vllm_ascend_models.LAYER
    assert layer["name"] == "models" and "after" not in layer  # imports no other vLLM-facing layer
    assert resolve_obj_by_qualname(layer["provides"]["configure"]) is vllm_ascend_models.configure
    data_roles = {"quantization_methods", "msmodelslim_method"}  # values, not callables
    for role, qualname in layer["provides"].items():
        if role not in data_roles:
            assert callable(resolve_obj_by_qualname(qualname)), role


def test_description_publishes_the_quantization_methods_this_layer_serves():
    # the platform keeps no copy of these names: what is published here is what it serves
    from vllm.model_executor.layers.quantization import QUANTIZATION_METHODS, get_quantization_config
    from vllm.utils.import_utils import resolve_obj_by_qualname
    from vllm_ascend_models.quantization.config import AscendQuantConfig

    provides = vllm_ascend_models.LAYER["provides"]
    methods = resolve_obj_by_qualname(provides["quantization_methods"])
    msmodelslim = resolve_obj_by_qualname(provides["msmodelslim_method"])
    assert methods == ("ascend", "compressed-tensors") and msmodelslim == "ascend"
    # the msModelSlim name is the one register() gave vLLM's registry, for our config class
    assert msmodelslim in QUANTIZATION_METHODS
    assert get_quantization_config(msmodelslim) is AscendQuantConfig
    assert set(methods) <= set(QUANTIZATION_METHODS)


def test_configure_hook_enables_our_custom_ops():
    from types import SimpleNamespace

    cfg = SimpleNamespace(compilation_config=_CC(["none"]))
    vllm_ascend_models.configure(cfg, None)
    assert cfg.compilation_config.custom_ops == ["none", "+silu_and_mul", "+rotary_embedding"]


class _CC:
    def __init__(self, custom_ops):
        self.custom_ops = custom_ops


def test_enable_custom_ops_adds_our_ops_once():
    cc = _CC(["none"])
    assert vllm_ascend_models.enable_custom_ops(cc) == ["+silu_and_mul", "+rotary_embedding"]
    assert vllm_ascend_models.enable_custom_ops(cc) == []
    assert cc.custom_ops == ["none", "+silu_and_mul", "+rotary_embedding"]


def test_enable_custom_ops_respects_explicit_disable(caplog):
    cc = _CC(["all", "-silu_and_mul"])
    with caplog.at_level(logging.WARNING, logger="vllm.ascend.models"):
        added = vllm_ascend_models.enable_custom_ops(cc)
    assert added == ["+rotary_embedding"]
    assert "-silu_and_mul" in cc.custom_ops and "+silu_and_mul" not in cc.custom_ops
    assert any("-silu_and_mul" in r.getMessage() for r in caplog.records)


def test_enable_custom_ops_on_a_real_config_turns_ours_on(vllm_context, oot_platform):
    """Inductor's default 'none' would switch our ops off; the helper switches them back on."""
    from vllm.model_executor.layers.activation import SiluAndMul
    from vllm_ascend_models.layers.activation import AscendSiluAndMul

    with vllm_context(["none"]) as cfg:
        vllm_ascend_models.enable_custom_ops(cfg.compilation_config)
        assert cfg.compilation_config.is_custom_op_enabled("silu_and_mul")
        assert cfg.compilation_config.is_custom_op_enabled("rotary_embedding")
        layer = SiluAndMul()
    assert isinstance(layer, AscendSiluAndMul)
    assert layer._forward_method == layer.forward_oot
