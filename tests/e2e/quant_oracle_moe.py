# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The independent oracle of quant_oracle.py extended to W8A8_DYNAMIC MoE experts.

HF transformers 5 holds a Qwen3-MoE layer's experts as one module with fused 3-D parameters
(``Qwen3MoeExperts``: ``gate_up_proj`` [E, 2I, H], ``down_proj`` [E, H, I], called with the
router's top-k ids and weights). When ``quant_model_description.json`` marks the per-expert
tensors ``<experts>.<e>.{gate,up,down}_proj.weight`` W8A8_DYNAMIC, that module is replaced by one
that runs the same routing sum with each expert's three projections as quant_oracle's
``_FakeQuantLinear`` (per-token ``s_t = max|x_t| / 127``, ``x_q = round(x / s_t)``,
``y = (x_q @ W^T) * w_scale * s_t`` in float64 on the checkpoint's int8 tensors), so the same
perturbed runs apply. Semantics: HF ``Qwen3MoeExperts.forward``; msModelSlim ``ascendv1.py``.

With ``tp`` > 1 the oracle follows tensor parallelism's arithmetic: a row-parallel layer
(``o_proj``, the experts' ``down_proj``) has each rank quantize its contiguous 1/tp slice of the
input per token (its own ``s_t``: vLLM ``RowParallelLinear`` hands the method the local input,
as vllm-ascend's W8A8_DYNAMIC does on the NPU) and the partial products are summed, so its
tokens differ from the tp=1 scheme's at int8 steps; column-parallel layers see the whole input.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from quant_oracle import NOISE, _FakeQuantLinear, load_oracle
from safetensors import safe_open

PROJS = ("gate_proj", "up_proj", "down_proj")


class _RowParallelFakeQuant(_FakeQuantLinear):
    """W8A8_DYNAMIC with the input split into ``tp`` slices, each quantized per token alone."""

    def __init__(self, t: dict[str, torch.Tensor], tp: int):
        super().__init__("W8A8_DYNAMIC", t)
        self.tp = tp

    def forward(self, x_in):
        x = x_in.double()
        if _FakeQuantLinear.noise is not None:
            x = x * (1 + NOISE * torch.randn(x.shape, generator=_FakeQuantLinear.noise,
                                             dtype=x.dtype))
        out = 0
        for xs, ws in zip(x.chunk(self.tp, -1), self.w.chunk(self.tp, -1), strict=True):
            s = xs.abs().amax(-1, keepdim=True) / 127
            xq = torch.round(xs / torch.where(s == 0, torch.ones_like(s), s)).clamp(-128, 127)
            out = out + (xq @ ws.T) * self.w_scale * s
        return out.to(x_in.dtype)


def _linear(t: dict[str, torch.Tensor], tp: int, row_parallel: bool) -> _FakeQuantLinear:
    return _RowParallelFakeQuant(t, tp) if tp > 1 and row_parallel else _FakeQuantLinear(
        "W8A8_DYNAMIC", t)


class _FakeQuantExperts(torch.nn.Module):
    def __init__(self, experts: torch.nn.Module, prefix: str, tensors: dict, desc: dict, tp: int = 1):
        super().__init__()
        self.num_experts = experts.num_experts
        self.act_fn = experts.act_fn
        self.lin = torch.nn.ModuleList()
        for e in range(self.num_experts):
            parts = {}
            for proj in PROJS:
                stem = f"{prefix}.{e}.{proj}"
                assert desc[f"{stem}.weight"] == "W8A8_DYNAMIC", stem
                parts[proj] = _linear({k: tensors[f"{stem}.{k}"] for k in ("weight", "weight_scale")},
                                      tp, row_parallel=proj == "down_proj")
            self.lin.append(torch.nn.ModuleDict(parts))

    def forward(self, hidden_states, top_k_index, top_k_weights):
        out = torch.zeros_like(hidden_states)
        for e in range(self.num_experts):
            token, slot = torch.where(top_k_index == e)
            if token.numel() == 0:
                continue
            x = hidden_states[token]
            p = self.lin[e]
            h = p["down_proj"](self.act_fn(p["gate_proj"](x)) * p["up_proj"](x))
            out.index_add_(0, token, (h * top_k_weights[token, slot, None]).to(out.dtype))
        return out


def load_moe_oracle(float_path: str, quant_path: str, dtype: torch.dtype = torch.float32,
                    tp: int = 1):
    """``quant_oracle.load_oracle`` with the W8A8_DYNAMIC experts replaced, and with ``tp`` > 1
    the row-parallel ``o_proj`` quantized per rank slice (module doc)."""
    model = load_oracle(float_path, quant_path, dtype=dtype)
    desc = json.loads((Path(quant_path) / "quant_model_description.json").read_text())
    tensors = {}
    for f in sorted(Path(quant_path).glob("*.safetensors")):
        with safe_open(str(f), "pt") as sf:
            tensors.update({k: sf.get_tensor(k) for k in sf.keys() if ".experts." in k})
    replaced = 0
    for name, module in list(model.named_modules()):
        if hasattr(module, "gate_up_proj") and f"{name}.0.gate_proj.weight" in desc:
            parent, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent), child,
                    _FakeQuantExperts(module, name, tensors, desc, tp))
            replaced += 1
        elif tp > 1 and isinstance(module, _FakeQuantLinear) and name.endswith(".o_proj"):
            assert module.scheme == "W8A8_DYNAMIC", name
            parent, _, child = name.rpartition(".")
            quant = {"weight": module.w, "weight_scale": module.w_scale}
            setattr(model.get_submodule(parent), child, _RowParallelFakeQuant(quant, tp))
    assert replaced, f"{quant_path}: no quantized experts found for the oracle"
    return model
