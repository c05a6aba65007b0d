# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Independent oracle for msModelSlim W8A8 / W8A8_DYNAMIC checkpoints.

HF transformers' own model class (not vLLM, not ascend_ops) over the float source checkpoint,
with every linear that ``quant_model_description.json`` marks quantized replaced by the
scheme's arithmetic on the checkpoint's int8 tensors (msModelSlim ``ascendv1.py`` formats):

* W8A8_DYNAMIC: ``s_t = max|x_t| / 127``, ``x_q = round(x / s_t)``; ``y = (x_q @ W^T) * w_scale * s_t``
* W8A8: ``x_q = clamp(round(x / input_scale + input_offset), -128, 127)``;
  ``y = (x_q @ W^T + quant_bias) * deq_scale`` (deq_scale int64 = float32 bits)

The quantized linears compute in float64 (exact int8 sums); the rest of the model runs in
``dtype``, by default float32 like the emulation engine: quantization makes the model sensitive
to the last bit of its activations (a rounding flip moves a value by a whole int8 step of its
token's range), so a float64 body differs from a float32 one by ~0.04 nats on SmolLM2's first
generated token while vLLM's float32 engine matches the float32 body to 1e-4 (measured on an
Intel box; on an AMD EPYC box the W8A8 static engine matches a 3e-7-noise run instead, see
``_quant_cases.assert_first_token_matches``).

That sensitivity is large: multiplying the quantizers' inputs by (1 + 1e-7 * noise), i.e.
float32 rounding, moves SmolLM2 W8A8_DYNAMIC log-probabilities by up to 0.5 nats (measured). So
teacher-forced judging runs the oracle ``PERTURBED + 1`` times (exact, then with such 1e-7 input
noise, fixed seeds) and a token agrees when it is within ``tol`` nats of the top-1 of any run:
a token the scheme's arithmetic produces within float32 rounding. A wrong scale, offset or
layout moves far outside that band.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import safe_open

PERTURBED = 3
NOISE = 1e-7


class _FakeQuantLinear(torch.nn.Module):
    noise: torch.Generator | None = None  # set while a perturbed run is in progress
    noise_scale: float = NOISE  # relative size of that run's input noise

    def __init__(self, scheme: str, t: dict[str, torch.Tensor]):
        super().__init__()
        self.scheme = scheme
        self.w = t["weight"].double()  # int8 values [out, in]
        if scheme == "W8A8_DYNAMIC":
            self.w_scale = t["weight_scale"].double().reshape(-1)
        else:
            deq = t["deq_scale"]
            if deq.dtype == torch.int64:
                deq = (deq & 0xFFFFFFFF).to(torch.int32).view(torch.float32)
            self.deq = deq.double()
            self.qbias = t["quant_bias"].double()
            self.in_scale = float(t["input_scale"].reshape(-1)[0])
            self.in_offset = float(t["input_offset"].reshape(-1)[0])

    def forward(self, x_in):
        x = x_in.double()
        if _FakeQuantLinear.noise is not None:
            x = x * (1 + _FakeQuantLinear.noise_scale * torch.randn(x.shape, generator=_FakeQuantLinear.noise,
                                             dtype=x.dtype))
        if self.scheme == "W8A8_DYNAMIC":
            s = x.abs().amax(-1, keepdim=True) / 127
            xq = torch.round(x / torch.where(s == 0, torch.ones_like(s), s)).clamp(-128, 127)
            return ((xq @ self.w.T) * self.w_scale * s).to(x_in.dtype)
        xq = torch.round(x / self.in_scale + self.in_offset).clamp(-128, 127)
        return ((xq @ self.w.T + self.qbias) * self.deq).to(x_in.dtype)


def load_oracle(float_path: str, quant_path: str, dtype: torch.dtype = torch.float32):
    """The HF model of ``float_path`` in ``dtype`` with the quantized linears of ``quant_path``."""
    from transformers import AutoModelForCausalLM

    desc = json.loads((Path(quant_path) / "quant_model_description.json").read_text())
    tensors = {}
    for f in sorted(Path(quant_path).glob("*.safetensors")):
        with safe_open(str(f), "pt") as sf:
            for k in sf.keys():
                tensors[k] = sf.get_tensor(k)
    model = AutoModelForCausalLM.from_pretrained(float_path, dtype=dtype,
                                                 attn_implementation="eager").eval()
    for name, module in list(model.named_modules()):
        scheme = desc.get(f"{name}.weight")
        if isinstance(module, torch.nn.Linear) and scheme in ("W8A8", "W8A8_DYNAMIC"):
            parts = {k[len(name) + 1:]: v for k, v in tensors.items() if k.startswith(name + ".")}
            parent, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent), child, _FakeQuantLinear(scheme, parts))
    return model


@torch.inference_mode()
def last_logprobs_under_noise(model, ids: list[int], noises, seeds: int) -> list[tuple]:
    """``[(noise, seed, log_probs)]``: the next-token log-probabilities (float64 ``[vocab]``)
    after ``ids``, from the exact run (``noise`` 0) and from ``seeds`` runs at each relative
    input noise in ``noises`` on the quantizers (module doc)."""
    out = []
    for noise in (0.0, *noises):
        for seed in range(1 if noise == 0.0 else seeds):
            _FakeQuantLinear.noise = torch.Generator().manual_seed(seed) if noise else None
            _FakeQuantLinear.noise_scale = noise or NOISE
            try:
                logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1]
            finally:
                _FakeQuantLinear.noise, _FakeQuantLinear.noise_scale = None, NOISE
            out.append((noise, seed, torch.log_softmax(logits.double(), -1)))
    return out


@torch.inference_mode()
def teacher_forced(model, prompts, outputs, tol: float = 0.05, perturbed: int = PERTURBED):
    """(agreed, total, misses) of ``outputs`` judged by ``model`` teacher-forced (module doc):
    the exact run and ``perturbed`` runs with 1e-7 input noise on the quantizers."""
    agreed, total, misses = 0, 0, []
    for k, (prompt, gen) in enumerate(zip(prompts, outputs, strict=True)):
        ids = torch.tensor([list(prompt) + list(gen)])
        runs = []
        for seed in range(perturbed + 1):
            _FakeQuantLinear.noise = torch.Generator().manual_seed(seed) if seed else None
            try:
                logits = model(input_ids=ids, use_cache=False).logits[0]
            finally:
                _FakeQuantLinear.noise = None
            runs.append(torch.log_softmax(
                logits[len(prompt) - 1: len(prompt) - 1 + len(gen)].double(), -1))
        for i, tok in enumerate(gen):
            gaps = [float(lp[i].max() - lp[i, tok]) for lp in runs]
            total += 1
            if min(gaps) <= tol:
                agreed += 1
            else:
                top = int(runs[0][i].argmax())
                misses.append(f"prompt {k} pos {i}: ours {tok}, oracle {top}, gap {min(gaps):.3f}")
    return agreed, total, misses
