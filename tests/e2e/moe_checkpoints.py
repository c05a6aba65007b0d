# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Tiny random-weight MoE checkpoints made with transformers' own classes (no hub access).

The tokenizer is the SmolLM2 checkpoint's (copied), so ``vocab_size`` matches it. Weights use a
wide init (``initializer_range``) so the next-token distributions are peaked enough for greedy
parity to be meaningful rather than a sequence of near ties.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")


def _vocab_size(smol_path: str) -> int:
    import json

    return json.loads((Path(smol_path) / "config.json").read_text())["vocab_size"]


def save_tiny(kind: str, out_dir: Path, smol_path: str, seed: int = 0, **overrides) -> str:
    """Write a tiny ``kind`` checkpoint ('qwen3_moe', 'mixtral', 'deepseek_v2',
    'deepseek_v32') to ``out_dir``."""
    import transformers

    common = dict(vocab_size=_vocab_size(smol_path), hidden_size=64, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                  initializer_range=0.2, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)
    if kind == "qwen3_moe":
        cfg = transformers.Qwen3MoeConfig(**common, head_dim=16, intermediate_size=96,
                                          moe_intermediate_size=32, num_experts=8,
                                          num_experts_per_tok=2, norm_topk_prob=True,
                                          decoder_sparse_step=1, mlp_only_layers=[])
        cls = transformers.Qwen3MoeForCausalLM
    elif kind == "mixtral":
        cfg = transformers.MixtralConfig(**common, head_dim=16, intermediate_size=48,
                                         num_local_experts=4, num_experts_per_tok=2)
        cls = transformers.MixtralForCausalLM
    elif kind == "deepseek_v2":
        common["num_key_value_heads"] = common["num_attention_heads"]  # MLA: one latent for all heads
        cfg = transformers.DeepseekV2Config(**common, intermediate_size=96, moe_intermediate_size=32,
                                            kv_lora_rank=512, q_lora_rank=None, qk_rope_head_dim=64,
                                            qk_nope_head_dim=32, v_head_dim=32,
                                            n_routed_experts=8, n_shared_experts=1,
                                            num_experts_per_tok=2, first_k_dense_replace=1,
                                            n_group=4, topk_group=2, topk_method="group_limited_greedy",
                                            norm_topk_prob=False, routed_scaling_factor=1.5)
        cls = transformers.DeepseekV2ForCausalLM
    elif kind == "deepseek_v32":
        # DeepSeek-V3.2 sparse MLA (DSA): q-LoRA, latent 512 + rope 64, an indexer of 8 heads x 128
        # (transformers' models/deepseek_v32: NeoX indexer rope, interleaved MLA rope)
        common["num_key_value_heads"] = common["num_attention_heads"]
        cfg = transformers.DeepseekV32Config(**common, intermediate_size=96, moe_intermediate_size=32,
                                             kv_lora_rank=512, q_lora_rank=48, qk_rope_head_dim=64,
                                             qk_nope_head_dim=32, v_head_dim=32, n_routed_experts=8,
                                             n_shared_experts=1, num_experts_per_tok=2,
                                             first_k_dense_replace=1, n_group=4, topk_group=2,
                                             norm_topk_prob=True, routed_scaling_factor=1.5,
                                             index_topk=8, index_head_dim=128, index_n_heads=8)
        # what real DeepSeek-V3.2 configs say and transformers' router does (sigmoid scores plus a
        # correction bias, group-limited): vLLM reads the routing from these two keys
        cfg.topk_method, cfg.scoring_func = "noaux_tc", "sigmoid"
        cls = transformers.DeepseekV32ForCausalLM
    else:
        raise ValueError(f"unknown kind {kind!r}")
    for k, v in overrides.items():
        setattr(cfg, k, v)
    torch.manual_seed(seed)
    model = cls(cfg).to(torch.float32).eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    for name in TOKENIZER_FILES:
        src = Path(smol_path) / name
        if src.exists():
            shutil.copy(src, out_dir / name)
    return str(out_dir)
