# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""A tiny Qwen3-MoE W8A8_DYNAMIC checkpoint in msModelSlim's format, MoE experts included.

msModelSlim (26.1.0, ``quant_checkpoints.quantized``) quantizes the tiny Qwen3-MoE of
``moe_checkpoints.save_tiny`` on the CPU, but only its attention linears: under transformers 5
the Qwen3-MoE experts are one fused 3-D parameter per projection (``Qwen3MoeExperts``), not
``nn.Linear`` modules, so msModelSlim's ``linear_quant`` step never sees them and its saver writes
them in float, fused (``mlp.experts.gate_up_proj`` / ``mlp.experts.down_proj``: ``FLOAT``). This
module takes that msModelSlim output and replaces the fused float experts by what msModelSlim's
``ascendv1_saver`` writes for a per-expert ``nn.Linear`` under the same ``linear_quant`` config
(int8 per-channel symmetric min-max, ``W8A8_DYNAMIC``), computed with msModelSlim's own
arithmetic, which ``check_msmodelslim_arithmetic`` confirms bit for bit on the attention linears
it did quantize: ``weight_scale = max|w_row| / 127`` float32 [out, 1], ``weight =
round(w / weight_scale)`` int8 [out, in], ``weight_offset`` zeros [out, 1]; description entries
``W8A8_DYNAMIC`` for the three tensors. The router (``mlp.gate``) stays float as msModelSlim
left it. Cached next to the msModelSlim output.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from moe_checkpoints import save_tiny
from quant_checkpoints import RECIPE_VERSION, quantized
from safetensors import safe_open
from safetensors.torch import save_file

NAME = "tiny-qwen3-moe-s0"
WEIGHTS = "quant_model_weights-00001-of-00001.safetensors"
#: bump to rebuild the cached expert conversion
EXPERTS_VERSION = "1"


def _tensors(path: Path) -> dict[str, torch.Tensor]:
    out = {}
    for f in sorted(path.glob("*.safetensors")):
        with safe_open(str(f), "pt") as sf:
            out.update({k: sf.get_tensor(k) for k in sf.keys()})
    return out


def per_channel_int8(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """msModelSlim's int8 per-channel symmetric min-max weight: (int8 [out, in], scale [out, 1])."""
    scale = w.float().abs().amax(dim=1, keepdim=True) / 127
    return torch.round(w.float() / scale).clamp(-128, 127).to(torch.int8), scale


def check_msmodelslim_arithmetic(src: dict, quant: dict, desc: dict) -> None:
    """Every linear msModelSlim quantized equals ``per_channel_int8`` of its float weight."""
    checked = 0
    for key, scheme in desc.items():
        if scheme == "W8A8_DYNAMIC" and key.endswith(".weight") and key in src:
            w, scale = per_channel_int8(src[key])
            stem = key[: -len(".weight")]
            assert torch.equal(w, quant[key]) and torch.equal(scale, quant[f"{stem}.weight_scale"]), key
            checked += 1
    assert checked, "msModelSlim quantized no linear: nothing to check its arithmetic against"


def tiny_moe_w8a8_dynamic(tmp_dir: Path, smol_path: str) -> tuple[str, str]:
    """(float source checkpoint, W8A8_DYNAMIC checkpoint with int8 experts) of the tiny Qwen3-MoE."""
    src = save_tiny("qwen3_moe", tmp_dir / "float", smol_path, seed=0)
    base = Path(quantized("w8a8-dynamic", source=src, name=NAME))
    out = base.with_name(f"{NAME}-experts-r{RECIPE_VERSION}.{EXPERTS_VERSION}")
    if (out / "quant_model_description.json").exists():
        return src, str(out)
    work = out.with_name(out.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(base, work)
    desc = json.loads((base / "quant_model_description.json").read_text())
    quant, floats = _tensors(base), _tensors(Path(src))
    check_msmodelslim_arithmetic(floats, quant, desc)
    for key in [k for k in desc if ".mlp.experts." in k]:  # the fused float experts
        desc.pop(key)
        quant.pop(key, None)
    for key, w in floats.items():
        if ".mlp.experts." not in key:
            continue
        stem = key[: -len(".weight")]
        wq, scale = per_channel_int8(w)
        quant.update({key: wq, f"{stem}.weight_scale": scale,
                      f"{stem}.weight_offset": torch.zeros_like(scale)})
        desc.update({key: "W8A8_DYNAMIC", f"{stem}.weight_scale": "W8A8_DYNAMIC",
                     f"{stem}.weight_offset": "W8A8_DYNAMIC"})
    for f in work.glob("*.safetensors"):
        f.unlink()
    save_file({k: v.contiguous() for k, v in quant.items()}, str(work / WEIGHTS))
    index = {"metadata": {"total_size": sum(t.numel() * t.element_size() for t in quant.values())},
             "weight_map": dict.fromkeys(sorted(quant), WEIGHTS)}
    (work / "quant_model_weights.safetensors.index.json").write_text(json.dumps(index, indent=2))
    (work / "quant_model_description.json").write_text(json.dumps(desc, indent=2))
    shutil.rmtree(out, ignore_errors=True)
    work.rename(out)
    return src, str(out)
