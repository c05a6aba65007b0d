# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""A LoRA adapter on the routed experts of a tiny MoE checkpoint, and its merged oracle checkpoint.

peft on transformers 5 cannot target the per-expert projections (the HF module holds the experts
as fused 3D parameters), so the adapter is written here in the PEFT file layout vLLM 0.32 loads
for 2D MoE models (``vllm/lora/lora_model.py``): ``adapter_config.json`` from peft's own
``LoraConfig.save_pretrained`` and ``adapter_model.safetensors`` with
``base_model.model.<module>.lora_A.weight`` [r, in] / ``lora_B.weight`` [out, r] for every
expert's ``gate_proj``, ``up_proj`` and ``down_proj`` (the checkpoint's per-expert names).
The oracle checkpoint is the base with every adapted weight replaced by W + (alpha / r) B A, the
LoRA definition (Hu et al., 2021; PEFT ``merge_and_unload``), run by HF transformers.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch

EXPERT_PROJ = ("gate_proj", "up_proj", "down_proj")


def make_expert_adapter(model_dir: str, out_dir: Path, seed: int, rank: int = 16,
                        b_std: float = 1.0) -> str:
    """Write a seeded random adapter (alpha = 2 * rank) on every expert projection."""
    from peft import LoraConfig
    from safetensors import safe_open
    from safetensors.torch import save_file

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(seed)
    tensors = {}
    with safe_open(str(Path(model_dir) / "model.safetensors"), framework="pt") as st:
        for key in sorted(st.keys()):
            module = key[: -len(".weight")]
            if ".experts." not in key or module.rsplit(".", 1)[-1] not in EXPERT_PROJ:
                continue
            out_f, in_f = st.get_slice(key).get_shape()
            tensors[f"base_model.model.{module}.lora_A.weight"] = (
                torch.randn(rank, in_f, generator=gen) / in_f ** 0.5)
            tensors[f"base_model.model.{module}.lora_B.weight"] = (
                torch.randn(out_f, rank, generator=gen) * b_std / rank ** 0.5)
    save_file(tensors, str(out_dir / "adapter_model.safetensors"))
    LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=list(EXPERT_PROJ), bias="none",
               task_type="CAUSAL_LM").save_pretrained(str(out_dir))
    return str(out_dir)


def merged_checkpoint(model_dir: str, adapter_dir: str, out_dir: Path) -> str:
    """Copy ``model_dir`` to ``out_dir`` with the adapter merged into its weights (float32)."""
    import json

    from safetensors.torch import load_file, save_file

    out_dir = Path(out_dir)
    shutil.copytree(model_dir, out_dir, dirs_exist_ok=True)
    cfg = json.loads((Path(adapter_dir) / "adapter_config.json").read_text())
    scale = cfg["lora_alpha"] / cfg["r"]
    weights = load_file(str(Path(model_dir) / "model.safetensors"))
    lora = load_file(str(Path(adapter_dir) / "adapter_model.safetensors"))
    for key, a in lora.items():
        if not key.endswith(".lora_A.weight"):
            continue
        module = key[len("base_model.model."): -len(".lora_A.weight")]
        b = lora[key.replace(".lora_A.", ".lora_B.")]
        w = weights[module + ".weight"]
        weights[module + ".weight"] = (w.double() + scale * (b.double() @ a.double())).to(w.dtype)
    save_file(weights, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
    return str(out_dir)
