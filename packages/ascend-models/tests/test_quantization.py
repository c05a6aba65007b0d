# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""AscendQuantConfig (quantization="ascend") without an engine: the registry entry, per-layer
schemes from a quant_model_description.json in msModelSlim's format (msModelSlim
``ascendv1.py`` saver), refusals naming the tensor, msModelSlim's int64 deq_scale encoding."""

from __future__ import annotations

import numpy as np
import pytest
import torch


def _desc(**over):
    d = {"model_quant_type": "W8A8_DYNAMIC", "version": "1.0.0", "metadata": {}, "group_size": 0,
         "optional": {}, "model.embed_tokens.weight": "FLOAT"}
    for part in ("q_proj", "k_proj", "v_proj", "o_proj"):
        d[f"model.layers.0.self_attn.{part}.weight"] = "W8A8_DYNAMIC"
    for part in ("gate_proj", "up_proj", "down_proj"):
        d[f"model.layers.0.mlp.{part}.weight"] = "W8A8"
    d.update(over)
    return d


def _config(desc):
    from vllm_ascend_models.quantization.config import AscendQuantConfig

    cfg = AscendQuantConfig.from_config(desc)
    cfg.packed_modules_mapping = {"qkv_proj": ["q_proj", "k_proj", "v_proj"],
                                  "gate_up_proj": ["gate_proj", "up_proj"]}
    return cfg


def test_registered_under_ascend():
    from vllm.model_executor.layers.quantization import get_quantization_config
    from vllm_ascend_models.quantization import register_quantization
    from vllm_ascend_models.quantization.config import AscendQuantConfig

    register_quantization()
    assert get_quantization_config("ascend") is AscendQuantConfig
    # read in maybe_update_config (it knows the model path and can say what is missing)
    assert AscendQuantConfig.get_config_filenames() == []


def test_fused_and_single_layers_take_their_parts_scheme():
    cfg = _config(_desc())
    assert cfg.scheme_of("model.layers.0.self_attn.qkv_proj") == "W8A8_DYNAMIC"
    assert cfg.scheme_of("model.layers.0.mlp.gate_up_proj") == "W8A8"
    assert cfg.scheme_of("model.layers.0.mlp.down_proj") == "W8A8"


def test_unsupported_scheme_named():
    with pytest.raises(ValueError, match=r"'model.layers.0.mlp.up_proj.weight'.*'W4A8_DYNAMIC'"):
        _config(_desc(**{"model.layers.0.mlp.up_proj.weight": "W4A8_DYNAMIC"}))


def test_fused_parts_must_agree():
    cfg = _config(_desc(**{"model.layers.0.self_attn.v_proj.weight": "FLOAT"}))
    with pytest.raises(ValueError, match=r"qkv_proj.*v_proj\.weight: FLOAT"):
        cfg.scheme_of("model.layers.0.self_attn.qkv_proj")


def test_missing_entry_named():
    d = _desc()
    del d["model.layers.0.self_attn.o_proj.weight"]
    with pytest.raises(ValueError, match=r"no entry for 'model.layers.0.self_attn.o_proj.weight'"):
        _config(d).scheme_of("model.layers.0.self_attn.o_proj")


def test_deq_scale_int64_decodes_msmodelslim_encoding():
    from vllm_ascend_models.quantization.linear import decode_deq_scale

    f = np.array([1.5e-4, 3.25e-5, 0.02], dtype=np.float32)
    # msModelSlim format/common/deqscale.py: the float32 bits read as int32, widened to int64
    enc = torch.tensor(np.frombuffer(f.tobytes(), dtype=np.int32).astype(np.int64))
    assert torch.equal(decode_deq_scale(enc), torch.from_numpy(f))
    assert torch.equal(decode_deq_scale(torch.from_numpy(f)), torch.from_numpy(f))
    with pytest.raises(ValueError, match="deq_scale must be float32 or int64"):
        decode_deq_scale(torch.ones(3, dtype=torch.float16))
