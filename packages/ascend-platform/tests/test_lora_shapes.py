# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``lora_shapes.adapter_mismatches``: peft adapters (made by peft on a tiny transformers model)
checked against checkpoints written by transformers, from safetensors headers."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

from vllm_ascend_platform.options.lora_shapes import adapter_mismatches  # noqa: E402


def _model(path, hidden: int, arch: str = "llama") -> str:
    torch.manual_seed(0)
    if arch == "llama":
        cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=hidden, intermediate_size=32,
                                       num_hidden_layers=1, num_attention_heads=2,
                                       num_key_value_heads=2)
        model = transformers.LlamaForCausalLM(cfg)
    else:
        cfg = transformers.GPT2Config(vocab_size=64, n_embd=hidden, n_layer=1, n_head=2)
        model = transformers.GPT2LMHeadModel(cfg)
    model.save_pretrained(str(path), safe_serialization=True)
    return str(path), model


def _adapter(model, path, targets) -> str:
    cfg = peft.LoraConfig(r=4, lora_alpha=8, target_modules=targets, init_lora_weights=False)
    peft.get_peft_model(model, cfg).save_pretrained(str(path))
    return str(path)


def test_adapter_of_the_same_model_fits(tmp_path):
    base, model = _model(tmp_path / "m", 16)
    adapter = _adapter(model, tmp_path / "a", ["q_proj", "v_proj", "down_proj"])
    problems, compared = adapter_mismatches(adapter, base)
    assert problems == [] and compared == 6  # lora_A and lora_B of three modules


def test_adapter_of_another_size_is_named(tmp_path):
    base, _ = _model(tmp_path / "m", 16)
    _, other = _model(tmp_path / "other", 32)
    adapter = _adapter(other, tmp_path / "a", ["q_proj"])
    problems, compared = adapter_mismatches(adapter, base)
    assert compared == 2 and len(problems) == 2
    assert "input size 32" in problems[0] or "input size 32" in problems[1]
    assert any("q_proj.weight [16, 16] needs 16" in p for p in problems)


def test_adapter_of_another_architecture_names_no_module(tmp_path):
    base, _ = _model(tmp_path / "m", 16)
    _, gpt2 = _model(tmp_path / "g", 16, arch="gpt2")
    adapter = _adapter(gpt2, tmp_path / "a", ["c_attn"])
    problems, _ = adapter_mismatches(adapter, base)
    assert len(problems) == 1 and "names a module of the model" in problems[0]


def test_nothing_to_compare_without_safetensors(tmp_path):
    assert adapter_mismatches(str(tmp_path / "none"), str(tmp_path / "none")) == ([], 0)
