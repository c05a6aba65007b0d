# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""A tiny random-weight Qwen3 checkpoint for engine tests that need a real model but no quality.

Same recipe as ``tests/e2e/test_parallel.py``'s ``tiny_qwen3`` fixture: transformers'
``Qwen3ForCausalLM`` (float32; hidden 64, 2 layers, 4 query / 2 KV heads of size 16, so TP=2
splits both head counts) with the SmolLM2 tokenizer copied from ``vllm-ascend
prepare-demo-model`` and ``vocab_size`` set to that tokenizer's length. Weights come from
``torch.manual_seed(seed)`` and a wide init (``initializer_range=0.2``), so the same seed always
writes the same checkpoint. No hub access.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def save_tiny_qwen3(out_dir: str | os.PathLike, seed: int = 0,
                    max_position_embeddings: int = 512) -> str:
    """Write the checkpoint (config, safetensors weights, tokenizer) to ``out_dir``; return its path.

    ``max_position_embeddings`` bounds the engine's ``max_model_len`` (vLLM refuses a longer one).
    """
    import torch
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    from vllm_ascend import demo_model

    path = Path(out_dir)
    path.mkdir(parents=True, exist_ok=True)
    tok_src = str(demo_model.prepare())
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tok_src, name), path / name)
    vocab = len(AutoTokenizer.from_pretrained(str(path)))
    cfg = Qwen3Config(
        vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        max_position_embeddings=max_position_embeddings, tie_word_embeddings=False,
        torch_dtype="float32", initializer_range=0.2,
    )
    torch.manual_seed(seed)
    Qwen3ForCausalLM(cfg).to(torch.float32).save_pretrained(str(path))
    return str(path)
