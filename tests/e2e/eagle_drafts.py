# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Tiny random-weight EAGLE / EAGLE-3 draft heads for SmolLM2 (no hub access).

The config is the target's ``LlamaConfig`` (transformers) cut to one decoder layer; vLLM 0.32
wraps it in ``EAGLEConfig`` and picks ``EagleLlamaForCausalLM`` / ``Eagle3LlamaForCausalLM``
(``vllm/config/speculative.py``, ``vllm/transformers_utils/configs/eagle.py``). Tensor names
follow what those classes load (``vllm/model_executor/models/llama_eagle.py`` and
``llama_eagle3.py``: names without the ``model.`` prefix, which ``load_weights`` adds):

* EAGLE: ``fc`` ``[H, 2H]`` over ``cat(embedding, target hidden)``, one Llama layer whose
  ``input_layernorm`` is dropped; embeddings and LM head are the target's.
* EAGLE-3: ``fc`` ``[H, 3H]`` over three target layers' hidden states, one layer whose
  attention reads ``cat(embedding, hidden)`` (q/k/v in-features ``2H``) with ``hidden_norm``,
  a final ``norm``, its own ``lm_head`` over ``draft_vocab_size`` tokens and ``d2t`` (draft id
  -> target id offset).

vLLM's ``AutoWeightsLoader`` raises on a name the model does not have, so a wrong name here
fails at load time.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def _layer(cfg: dict, q_in: int, gen: torch.Generator, *, eagle3: bool) -> dict[str, torch.Tensor]:
    h, d = cfg["hidden_size"], cfg["head_dim"]
    nh, nkv, inter = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["intermediate_size"]

    def w(rows: int, cols: int) -> torch.Tensor:
        return torch.randn(rows, cols, generator=gen) * 0.02

    p = "layers.0."
    out = {
        p + "self_attn.q_proj.weight": w(nh * d, q_in),
        p + "self_attn.k_proj.weight": w(nkv * d, q_in),
        p + "self_attn.v_proj.weight": w(nkv * d, q_in),
        p + "self_attn.o_proj.weight": w(h, nh * d),
        p + "mlp.gate_proj.weight": w(inter, h),
        p + "mlp.up_proj.weight": w(inter, h),
        p + "mlp.down_proj.weight": w(h, inter),
        p + "post_attention_layernorm.weight": torch.ones(h),
    }
    if eagle3:
        out[p + "input_layernorm.weight"] = torch.ones(h)
        out[p + "hidden_norm.weight"] = torch.ones(h)
    return out


def save_draft(method: str, out_dir: Path, target_path: str, *, seed: int = 0,
               draft_vocab_size: int = 2048, vocab_size: int | None = None) -> str:
    """Write a one-layer ``method`` ('eagle' or 'eagle3') draft for the Llama at ``target_path``.

    ``vocab_size`` overrides the draft's vocabulary (the start-up refusal test makes a draft
    whose vocabulary differs from the target's). Returns the checkpoint folder.
    """
    from safetensors.torch import save_file

    cfg = json.loads((Path(target_path) / "config.json").read_text())
    cfg["num_hidden_layers"] = 1
    cfg["tie_word_embeddings"] = False
    if vocab_size is not None:
        cfg["vocab_size"] = vocab_size
    h = cfg["hidden_size"]
    gen = torch.Generator().manual_seed(seed)
    if method == "eagle":
        tensors = _layer(cfg, h, gen, eagle3=False)
        tensors["fc.weight"] = torch.randn(h, 2 * h, generator=gen) * 0.02
    elif method == "eagle3":
        tensors = _layer(cfg, 2 * h, gen, eagle3=True)
        tensors["fc.weight"] = torch.randn(h, 3 * h, generator=gen) * 0.02
        tensors["norm.weight"] = torch.ones(h)
        tensors["lm_head.weight"] = torch.randn(draft_vocab_size, h, generator=gen) * 0.02
        tensors["d2t"] = torch.zeros(draft_vocab_size, dtype=torch.int64)  # draft id i -> target i
        cfg["draft_vocab_size"] = draft_vocab_size
    else:
        raise ValueError(f"method must be 'eagle' or 'eagle3', got {method!r}")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(json.dumps(cfg, indent=1))
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(out_dir / "model.safetensors"))
    for name in TOKENIZER_FILES:
        src = Path(target_path) / name
        if src.exists():
            shutil.copy(src, out_dir / name)
    return str(out_dir)
