# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Speculative configurations that cannot be served fail at start-up (engine config creation,
before any weights load) with a message naming the option and the fix.

Checked through vLLM's own ``EngineArgs.create_engine_config`` (which runs the platform's
``check_and_update_config``); no engine is built.
"""

from __future__ import annotations

import pytest
from eagle_drafts import save_draft


def _config(model_path: str, spec: dict):
    from vllm.engine.arg_utils import EngineArgs

    return EngineArgs(model=model_path, dtype="float32", max_model_len=512,
                      speculative_config=spec).create_engine_config()


def test_zero_speculative_tokens_is_refused(model_path):
    with pytest.raises(Exception, match="num_speculative_tokens"):
        _config(model_path, {"method": "ngram", "num_speculative_tokens": 0,
                             "prompt_lookup_max": 3})


def test_draft_with_another_vocabulary_is_refused(model_path, tmp_path):
    draft = save_draft("eagle", tmp_path / "eagle-32k", model_path, vocab_size=32000)
    with pytest.raises(Exception, match=r"vocabulary of 32000 tokens.*49152.*same tokenizer"):
        _config(model_path, {"method": "eagle", "model": draft, "num_speculative_tokens": 2})


def test_matching_draft_is_accepted(model_path, tmp_path):
    """Control for the test above: the same draft with the target's vocabulary passes."""
    draft = save_draft("eagle", tmp_path / "eagle", model_path)
    cfg = _config(model_path, {"method": "eagle", "model": draft, "num_speculative_tokens": 2})
    assert cfg.speculative_config.draft_model_config.get_vocab_size() == 49152


def test_mtp_on_a_model_without_mtp_layers_is_refused(model_path):
    """SmolLM2 (Llama) has no MTP layers; vLLM refuses the method for its architecture."""
    with pytest.raises(Exception, match="mtp"):
        _config(model_path, {"method": "mtp", "num_speculative_tokens": 1})


def test_mtp_on_deepseek_v3_without_mtp_layers_names_the_option(tmp_path, model_path):
    """vLLM 0.32 would divide by num_nextn_predict_layers (ZeroDivisionError); the platform's
    ``mtp-without-layers`` patch refuses first, naming the option."""
    import shutil

    import transformers

    cfg = transformers.DeepseekV3Config(
        vocab_size=49152, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=4, intermediate_size=96, moe_intermediate_size=32, kv_lora_rank=512,
        q_lora_rank=None, qk_rope_head_dim=64, qk_nope_head_dim=32, v_head_dim=32,
        n_routed_experts=8, n_shared_experts=1, num_experts_per_tok=2, first_k_dense_replace=1,
        n_group=4, topk_group=2, num_nextn_predict_layers=0, max_position_embeddings=512)
    cfg.save_pretrained(tmp_path)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(f"{model_path}/{name}", tmp_path / name)
    with pytest.raises(Exception, match="no MTP layers"):
        _config(str(tmp_path), {"method": "mtp", "num_speculative_tokens": 1})
