# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""LoRA adapters for the e2e tests, made in the test with ``peft`` on the SmolLM2 checkpoint,
and their HF transformers oracle (the base model with the adapter merged by peft).

Adapters have non-zero random A and B (peft's default zero B would be a no-op), seeded, on the
attention and MLP projections: packed qkv and gate_up slices and the row-parallel o/down.
"""

from __future__ import annotations

from pathlib import Path

import torch
from hf_oracle import HFOracle

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def make_adapter(model_path: str, out_dir: Path, seed: int, rank: int = 16,
                 b_std: float = 0.15, targets: list[str] = TARGETS) -> str:
    """Save a peft LoRA adapter (alpha = 2 * rank, scale 2) with seeded Gaussian A and B."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    out_dir = Path(out_dir)
    if (out_dir / "adapter_config.json").exists():
        return str(out_dir)
    base = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    cfg = LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=targets, lora_dropout=0.0,
                     init_lora_weights=False, bias="none", task_type="CAUSAL_LM")
    model = get_peft_model(base, cfg)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_A" in name:
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[1] ** 0.5)
            elif "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * b_std / p.shape[1] ** 0.5)
    model.save_pretrained(str(out_dir))
    return str(out_dir)


@torch.inference_mode()
def teacher_forced_agreement(model, rows, tol: float = 0.05) -> tuple[int, int]:
    """(agreeing positions, positions) of generated ``rows`` [(prompt ids, generated ids)]
    under the HF ``model``, teacher-forced: a position agrees when the generated token is the
    model's top-1 or within ``tol`` nats of it."""
    agreed = total = 0
    for prompt, gen in rows:
        ids = torch.tensor([list(prompt) + list(gen)])
        logits = model(input_ids=ids, use_cache=False).logits[0].float()
        lp = torch.log_softmax(logits[len(prompt) - 1: len(prompt) - 1 + len(gen)], dim=-1)
        for i, tok in enumerate(gen):
            total += 1
            agreed += int(float(lp[i].max() - lp[i, tok]) <= tol)
    return agreed, total


class MergedOracle(HFOracle):
    """HF float32 greedy oracle of the base model with ``adapter`` merged (peft merge_and_unload)."""

    def __init__(self, model_path: str, adapter: str):
        from peft import PeftModel

        super().__init__(model_path)
        self.model = PeftModel.from_pretrained(self.model, adapter).merge_and_unload().eval()
