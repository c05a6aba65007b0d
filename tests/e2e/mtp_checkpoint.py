# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""A tiny DeepSeek-V3-shaped checkpoint (MLA + MoE) with one MTP layer, random weights.

transformers' ``DeepseekV3ForCausalLM`` has no MTP module, so the checkpoint is made in two
parts: a ``num_hidden_layers + 1``-layer model is built and saved, its last decoder layer is kept
as the MTP block (DeepSeek checkpoints store MTP layer ``i`` at ``model.layers.{num_hidden_layers
+ i}``), and the MTP layer's own tensors are added under the names vLLM 0.32's
``vllm/model_executor/models/deepseek_mtp.py`` loads: ``enorm``, ``hnorm``, ``eh_proj``,
``shared_head.norm``, ``shared_head.head`` (the MTP ``embed_tokens`` is omitted: the proposer
shares the target's). The config then says ``num_hidden_layers`` and
``num_nextn_predict_layers: 1``.

``eh_proj`` is ``[0 | I]`` (the embedding half dropped, the target's hidden state passed on) and
the MTP block's output projections are scaled down, so the draft's guess stays close to "the
target's last prediction again": on a repetitive greedy continuation some drafts are accepted,
without which the verification of accepted drafts (bonus tokens, KV of accepted rows) would go
untested. The target's LM head is its embedding matrix (made tied, saved untied) and uses a narrow init, so its
greedy continuations mix runs of one repeated token with changes: drafts are both accepted and
rejected. The target's own weights are not edited (the parity oracle is the target alone).
Routing: 8 experts in 2 groups of 4 (the simulated ``npu_moe_gating_top_k`` requires more than
2 experts per group, as the CANN operator does).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from moe_checkpoints import TOKENIZER_FILES, _vocab_size


def save_tiny_mtp(out_dir: Path, smol_path: str, seed: int = 0, num_nextn_predict_layers: int = 1) -> str:
    """Write the checkpoint to ``out_dir`` (float32 safetensors + SmolLM2's tokenizer); return it."""
    import shutil

    import transformers
    from safetensors.torch import load_file, save_file

    layers = 2
    cfg = transformers.DeepseekV3Config(
        vocab_size=_vocab_size(smol_path), hidden_size=64, num_hidden_layers=layers + 1,
        num_attention_heads=4, num_key_value_heads=4, intermediate_size=96, moe_intermediate_size=32,
        kv_lora_rank=512, q_lora_rank=None, qk_rope_head_dim=64, qk_nope_head_dim=32, v_head_dim=32,
        n_routed_experts=8, n_shared_experts=1, num_experts_per_tok=2, first_k_dense_replace=1,
        n_group=2, topk_group=1, norm_topk_prob=True, routed_scaling_factor=1.5,
        max_position_embeddings=512, initializer_range=0.1, tie_word_embeddings=True,
        bos_token_id=1, eos_token_id=2)
    torch.manual_seed(seed)
    model = transformers.DeepseekV3ForCausalLM(cfg).to(torch.float32).eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    files = sorted(out_dir.glob("*.safetensors"))
    if len(files) != 1:
        raise RuntimeError(f"expected one safetensors file in {out_dir}, found {files}")
    tensors = load_file(str(files[0]))
    h = cfg.hidden_size
    mtp = f"model.layers.{layers}."
    for name in list(tensors):  # the block's outputs, scaled down (see the module docstring)
        if name.startswith(mtp) and name.endswith(("o_proj.weight", "down_proj.weight")):
            tensors[name] = tensors[name] * 0.05
    # vLLM's DeepseekV2ForCausalLM does not tie: the LM head is written out as a copy
    tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"].clone()
    tensors[mtp + "enorm.weight"] = torch.ones(h)
    tensors[mtp + "hnorm.weight"] = torch.ones(h)
    tensors[mtp + "eh_proj.weight"] = torch.cat([torch.zeros(h, h), torch.eye(h)], dim=1)
    tensors[mtp + "shared_head.norm.weight"] = torch.ones(h)
    tensors[mtp + "shared_head.head.weight"] = tensors["model.embed_tokens.weight"].clone()  # tied
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(files[0]), metadata={"format": "pt"})
    config = json.loads((out_dir / "config.json").read_text())
    # DeepSeek-V3's routing as its published config.json spells it (transformers' class implies it,
    # vLLM reads the keys): sigmoid scores, group-limited top-k with the score-correction bias
    config.update(num_hidden_layers=layers, num_nextn_predict_layers=num_nextn_predict_layers,
                  topk_method="noaux_tc", scoring_func="sigmoid", tie_word_embeddings=False)
    (out_dir / "config.json").write_text(json.dumps(config, indent=2))
    for name in TOKENIZER_FILES:
        src = Path(smol_path) / name
        if src.exists():
            shutil.copy(src, out_dir / name)
    return str(out_dir)
