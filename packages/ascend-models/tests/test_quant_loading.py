# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""quantization="ascend" loading without an engine: real vLLM linear layers (one-rank gloo group)
take msModelSlim tensors through our checked loaders (quantization/loading.py). A tensor with the
wrong dtype or shape, or one that never arrives, is refused naming the checkpoint tensor and what
msModelSlim's ``ascendv1`` format has there (dtypes and shapes: msModelSlim's W8A8 / W8A8_DYNAMIC
tensor list, the saver's output read back from a real checkpoint in tests/e2e)."""

from __future__ import annotations

import socket

import pytest
import torch

HIDDEN, HEADS, KV_HEADS, HEAD = 64, 4, 2, 16
INTER = 96


@pytest.fixture(scope="module")
def tp_group(base_vllm_config):
    from vllm.config import set_current_vllm_config
    from vllm.distributed import parallel_state as ps

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with set_current_vllm_config(base_vllm_config):
        ps.init_distributed_environment(1, 0, f"tcp://127.0.0.1:{port}", 0, "gloo")
        ps.initialize_model_parallel(1, 1)
    yield
    ps.destroy_model_parallel()
    ps.destroy_distributed_environment()


def _config(scheme):
    from vllm_ascend_models.quantization.config import AscendQuantConfig

    desc = {"model_quant_type": scheme, "version": "1.0.0"}
    for part in ("q_proj", "k_proj", "v_proj", "o_proj"):
        desc[f"model.layers.0.self_attn.{part}.weight"] = scheme
    for part in ("gate_proj", "up_proj", "down_proj"):
        desc[f"model.layers.0.mlp.{part}.weight"] = scheme
    cfg = AscendQuantConfig(desc)
    cfg.packed_modules_mapping = {"qkv_proj": ["q_proj", "k_proj", "v_proj"],
                                  "gate_up_proj": ["gate_proj", "up_proj"]}
    return cfg


def _qkv(cfg, base_vllm_config):
    from vllm.config import set_current_vllm_config
    from vllm.model_executor.layers.linear import QKVParallelLinear

    with set_current_vllm_config(base_vllm_config):
        return QKVParallelLinear(HIDDEN, HEAD, HEADS, KV_HEADS, bias=False, quant_config=cfg,
                                 prefix="model.layers.0.self_attn.qkv_proj")


def _tensors(rows, scheme, g):
    """One part's checkpoint tensors in msModelSlim's ascendv1 format."""
    w = torch.randint(-127, 128, (rows, HIDDEN), generator=g, dtype=torch.int8)
    if scheme == "W8A8_DYNAMIC":
        return {"weight": w, "weight_scale": torch.rand(rows, 1, generator=g) * 1e-2 + 1e-3,
                "weight_offset": torch.zeros(rows, 1)}
    return {"weight": w, "input_scale": torch.tensor([0.02]), "input_offset": torch.tensor([3.0]),
            "deq_scale": torch.rand(rows, generator=g) * 1e-4,
            "quant_bias": torch.randint(-1000, 1000, (rows,), generator=g, dtype=torch.int32)}


def _load(layer, parts, skip=(), replace=None):
    for shard, tensors in parts.items():
        for name, t in tensors.items():
            if (shard, name) in skip:
                continue
            t = (replace or {}).get((shard, name), t)
            param = getattr(layer, name)
            param.weight_loader(param, t, shard)
    layer.quant_method.process_weights_after_loading(layer)


def _parts(scheme):
    g = torch.Generator().manual_seed(0)
    return {"q": _tensors(HEADS * HEAD, scheme, g), "k": _tensors(KV_HEADS * HEAD, scheme, g),
            "v": _tensors(KV_HEADS * HEAD, scheme, g)}


@pytest.mark.parametrize("scheme", ["W8A8", "W8A8_DYNAMIC"])
def test_complete_checkpoint_loads_and_matches_the_scheme(tp_group, base_vllm_config, scheme):
    layer = _qkv(_config(scheme), base_vllm_config)
    parts = _parts(scheme)
    _load(layer, parts)
    assert layer.weight.dtype == torch.int8  # kept int8 on the device, [in, out]
    assert layer.weight.shape == (HIDDEN, (HEADS + 2 * KV_HEADS) * HEAD)
    x = torch.randn(3, HIDDEN, generator=torch.Generator().manual_seed(1))
    y = layer(x)[0].double()
    # float64 reference of the scheme's arithmetic (linear.py module doc), part by part
    ref = []
    for t in parts.values():
        w = t["weight"].double()
        if scheme == "W8A8_DYNAMIC":
            s = x.double().abs().amax(-1, keepdim=True) / 127
            ref.append((torch.round(x.double() / s) @ w.T) * t["weight_scale"].double().T * s)
        else:
            xq = torch.round(x.double() / 0.02 + 3.0).clamp(-128, 127)
            ref.append((xq @ w.T + t["quant_bias"].double()) * t["deq_scale"].double())
    torch.testing.assert_close(y, torch.cat(ref, -1), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("scheme,shard,name", [
    ("W8A8_DYNAMIC", "k", "weight_scale"), ("W8A8", "v", "deq_scale"),
    ("W8A8", "q", "input_scale"), ("W8A8_DYNAMIC", "v", "weight")])
def test_missing_tensor_named(tp_group, base_vllm_config, scheme, shard, name):
    layer = _qkv(_config(scheme), base_vllm_config)
    part = {"q": "q_proj", "k": "k_proj", "v": "v_proj"}[shard]
    with pytest.raises(ValueError, match=rf"'model\.layers\.0\.self_attn\.{part}\.{name}' is "
                                         r"missing"):
        _load(layer, _parts(scheme), skip={(shard, name)})


@pytest.mark.parametrize("scheme,name,bad,expected", [
    ("W8A8_DYNAMIC", "weight", lambda t: t.float(), r"expected torch\.int8, found torch\.float32"),
    ("W8A8", "quant_bias", lambda t: t.long(), r"expected torch\.int32, found torch\.int64"),
    ("W8A8", "deq_scale", lambda t: t.half(),
     r"expected torch\.int64 or torch\.float32, found torch\.float16"),
    ("W8A8_DYNAMIC", "weight_scale", lambda t: t.reshape(-1), r"expected shape \[32, 1\], found "
                                                               r"\[32\]"),
    ("W8A8", "weight", lambda t: t[:, :-1], r"expected shape \[32, 64\], found \[32, 63\]"),
])
def test_wrong_dtype_or_shape_named(tp_group, base_vllm_config, scheme, name, bad, expected):
    layer = _qkv(_config(scheme), base_vllm_config)
    parts = _parts(scheme)
    with pytest.raises(ValueError, match=rf"'model\.layers\.0\.self_attn\.k_proj\.{name}'.*"
                                         + expected):
        _load(layer, parts, replace={("k", name): bad(parts["k"][name])})


def test_float_checkpoint_with_ascend_refused(tmp_path):
    from vllm_ascend_models.quantization.config import AscendQuantConfig

    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ValueError, match=r"has no quant_model_description\.json.*float "
                                         r"checkpoint.*msModelSlim"):
        AscendQuantConfig().maybe_update_config(str(tmp_path))


@pytest.mark.parametrize("scheme", ["W8A8", "W8A8_DYNAMIC"])
def test_scales_stay_float32_under_a_half_default_dtype(tp_group, base_vllm_config, scheme):
    # vLLM builds the model with the model dtype as torch's default; npu_quant_matmul takes
    # float32 scales (the simulator enforces it), so they must not follow that default
    saved = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        layer = _qkv(_config(scheme), base_vllm_config)
    finally:
        torch.set_default_dtype(saved)
    _load(layer, _parts(scheme))
    scales = ("deq_scale",) if scheme == "W8A8" else ("weight_scale",)
    assert all(getattr(layer, n).dtype == torch.float32 for n in scales)
