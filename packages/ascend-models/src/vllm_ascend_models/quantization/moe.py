# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""W8A8_DYNAMIC MoE experts of ``quantization="ascend"`` (msModelSlim checkpoints).

Checkpoint tensors per expert ``e`` and projection (msModelSlim ``ascendv1_saver``, the same
per-linear W8A8_DYNAMIC format as ``linear.py``): ``<experts>.<e>.<proj>.weight`` int8 [out, in],
``weight_scale`` / ``weight_offset`` float32 [out, 1] (per-channel symmetric: offset 0), with
``<proj>`` the model's gate / up / down names (``gate_proj`` / ``up_proj`` / ``down_proj`` for
Qwen3-MoE; vLLM ``RoutedExperts.ckpt_*_proj_name``). vLLM's expert weight loader stacks them into
``w13_weight`` int8 [E_local, 2I, H] (gate rows then up rows), ``w2_weight`` int8 [E_local, H, I]
and per-channel ``w13_weight_scale`` [E_local, 2I, 1] / ``w2_weight_scale`` [E_local, H, 1]
(``FusedMoeWeightScaleSupported.CHANNEL``, TP-sliced like the weights).

Forward (the expert step of ``vllm_ascend_models.moe.ascend_moe_forward``, as vllm-ascend's
W8A8_DYNAMIC MoE runs it): routed rows -> ``dynamic_quant`` (per token) -> ``grouped_quant_matmul``
(w13, int32 accumulation, dequantized by weight and token scales) -> SwiGLU -> ``dynamic_quant``
-> ``grouped_quant_matmul`` (w2). Weights stay int8 on the device.
"""

from __future__ import annotations

import ascend_ops
import torch
from vllm.model_executor.layers.fused_moe import FusedMoeWeightScaleSupported
from vllm.model_executor.layers.fused_moe.fused_moe_method_base import FusedMoEMethodBase
from vllm.model_executor.utils import set_weight_attrs

from vllm_ascend_models.moe import ascend_moe_forward, validate_layer, validate_moe_settings
from vllm_ascend_models.quantization.names import DESCRIPTION_FILE

#: vLLM shard id -> attribute of RoutedExperts naming the checkpoint projection
_SHARD_NAMES = {"w1": "ckpt_gate_proj_name", "w3": "ckpt_up_proj_name", "w2": "ckpt_down_proj_name"}
_PARAMS = ("weight", "weight_scale", "weight_offset")


def experts_scheme(description: dict, prefix: str, num_experts: int,
                   proj_names: tuple[str, ...]) -> str:
    """The scheme of the routed experts at vLLM module path ``prefix`` (``...mlp.experts``).

    Per-expert entries ``<prefix>.<e>.<proj>.weight`` for every expert and projection must
    exist and agree; a checkpoint whose experts were saved fused in float (``<prefix>.<name>``
    entries marked ``FLOAT``, what msModelSlim writes for a transformers model with fused 3-D
    expert parameters) is ``FLOAT``. Raises ValueError naming the tensor otherwise.
    """
    schemes: dict[str, str] = {}
    for e in range(num_experts):
        for proj in proj_names:
            key = f"{prefix}.{e}.{proj}.weight"
            if key in description:
                schemes[key] = description[key]
    if not schemes:
        fused = {k: v for k, v in description.items()
                 if k.startswith(prefix + ".") and isinstance(v, str)}
        if fused and set(fused.values()) == {"FLOAT"}:
            return "FLOAT"
        raise ValueError(f"{DESCRIPTION_FILE} has no entry for the experts of {prefix!r} (expected "
                         f"{prefix}.<expert>.{proj_names[0]}.weight); the description does not "
                         "match this model")
    if len(schemes) != num_experts * len(proj_names):
        missing = next(f"{prefix}.{e}.{p}.weight" for e in range(num_experts) for p in proj_names
                       if f"{prefix}.{e}.{p}.weight" not in schemes)
        raise ValueError(f"{DESCRIPTION_FILE} has no entry for {missing!r}; every expert of "
                         f"{prefix!r} needs one")
    if len(set(schemes.values())) > 1:
        first = next(iter(schemes.items()))
        other = next((k, v) for k, v in schemes.items() if v != first[1])
        raise ValueError(f"the experts of {prefix!r} mix quantization schemes ({first[0]}: "
                         f"{first[1]}, {other[0]}: {other[1]}); vLLM stacks them into one tensor, "
                         "so they must share one scheme")
    scheme = next(iter(schemes.values()))
    if scheme not in ("W8A8_DYNAMIC", "FLOAT"):
        raise ValueError(f"{DESCRIPTION_FILE}: tensor {next(iter(schemes))!r} has scheme "
                         f"{scheme!r}; MoE experts support W8A8_DYNAMIC (or FLOAT) only: "
                         "re-quantize the experts with msModelSlim's per_token (W8A8_DYNAMIC) config")
    return scheme


class AscendW8A8DynamicFusedMoEMethod(FusedMoEMethodBase):
    """Monolithic W8A8_DYNAMIC experts on ``ascend_ops`` (module doc); ``prefix`` is the
    experts' vLLM module path, used to name checkpoint tensors in errors."""

    def __init__(self, moe, prefix: str):
        super().__init__(moe)
        self.prefix = prefix
        par = moe.moe_parallel_config
        validate_moe_settings(num_experts=moe.num_experts, top_k=moe.experts_per_token,
                              ep_size=par.ep_size if par.use_ep else 1, scoring_func=None,
                              activation=moe.activation.value)
        if moe.is_lora_enabled:
            raise ValueError(f"{prefix}: LoRA on W8A8_DYNAMIC MoE experts is not supported; serve "
                             "the float checkpoint for expert LoRA, or drop --enable-lora")

    @property
    def is_monolithic(self) -> bool:
        return True

    def get_fused_moe_quant_config(self, layer):
        return None  # no vLLM modular kernel: the experts run in int8_experts

    def create_weights(self, layer, num_experts, hidden_size, intermediate_size_per_partition,
                       params_dtype, **extra_weight_attrs):
        validate_layer(layer, self.moe)
        loader = extra_weight_attrs.pop("weight_loader")
        i2 = 2 * intermediate_size_per_partition
        shapes = {"w13_weight": (num_experts, i2, hidden_size),
                  "w2_weight": (num_experts, hidden_size, intermediate_size_per_partition),
                  "w13_weight_scale": (num_experts, i2, 1), "w13_weight_offset": (num_experts, i2, 1),
                  "w2_weight_scale": (num_experts, hidden_size, 1),
                  "w2_weight_offset": (num_experts, hidden_size, 1)}
        tp = self.moe.moe_parallel_config.tp_size
        self._full = {"w1": (intermediate_size_per_partition * tp, hidden_size),
                      "w3": (intermediate_size_per_partition * tp, hidden_size),
                      "w2": (hidden_size, intermediate_size_per_partition * tp)}
        self._proj = {sid: getattr(layer, attr) for sid, attr in _SHARD_NAMES.items()}
        self._loaded: set[tuple[str, str, int]] = set()
        for name, shape in shapes.items():
            dtype = torch.int8 if name.endswith("_weight") else torch.float32
            param = torch.nn.Parameter(torch.zeros(shape, dtype=dtype), requires_grad=False)
            layer.register_parameter(name, param)
            attrs = dict(extra_weight_attrs, weight_loader=self._checked(name, loader))
            if dtype == torch.float32:
                attrs["quant_method"] = FusedMoeWeightScaleSupported.CHANNEL.value
            set_weight_attrs(param, attrs)

    def _tensor(self, shard_id: str, expert_id: int, kind: str) -> str:
        return f"{self.prefix}.{expert_id}.{self._proj[shard_id]}.{kind}"

    def _checked(self, name: str, loader):
        kind = name.split("_", 1)[1]  # weight / weight_scale / weight_offset

        def checked(param, loaded_weight, weight_name, shard_id, expert_id, return_success=False):
            tensor = self._tensor(shard_id, expert_id, kind)
            ok = loaded_weight.dtype == torch.int8 if kind == "weight" else (
                loaded_weight.is_floating_point())
            if not ok:
                want = "int8" if kind == "weight" else "a floating dtype"
                raise ValueError(f"checkpoint tensor {tensor!r}: expected {want}, found "
                                 f"{loaded_weight.dtype} (msModelSlim ascendv1 W8A8_DYNAMIC format)")
            rows, cols = self._full[shard_id]
            want_shape = (rows, cols) if kind == "weight" else (rows, 1)
            if tuple(loaded_weight.shape) != want_shape:
                raise ValueError(f"checkpoint tensor {tensor!r}: expected shape {list(want_shape)}, "
                                 f"found {list(loaded_weight.shape)}")
            done = loader(param, loaded_weight, weight_name, shard_id, expert_id, return_success=True)
            if done:
                self._loaded.add((kind, shard_id, int(expert_id)))
            return done if return_success else None

        return checked

    def process_weights_after_loading(self, layer) -> None:
        emap = layer.expert_map
        local = (range(layer.global_num_experts) if emap is None
                 else [int(g) for g in torch.nonzero(emap >= 0).flatten()])
        for e in local:
            for sid in ("w1", "w3", "w2"):
                for kind in _PARAMS:
                    if (kind, sid, e) not in self._loaded:
                        raise ValueError(
                            f"checkpoint tensor {self._tensor(sid, e, kind)!r} is missing: "
                            f"{self.prefix} is W8A8_DYNAMIC in {DESCRIPTION_FILE}, so every expert "
                            f"needs its {', '.join(_PARAMS)}")
        for stem in ("w13", "w2"):
            scale = getattr(layer, f"{stem}_weight_scale").data
            offset = getattr(layer, f"{stem}_weight_offset").data
            if not (torch.isfinite(scale).all() and torch.isfinite(offset).all()):
                raise ValueError(f"{self.prefix}: {stem} weight_scale/weight_offset hold non-finite "
                                 "values")
            if bool((offset != 0).any()):
                raise ValueError(f"{self.prefix}: weight_offset must be all zeros (W8A8_DYNAMIC "
                                 "weights are symmetric); asymmetric int8 experts are not supported")
            # [E, N] float32 for grouped_quant_matmul
            setattr(layer, f"{stem}_weight_scale", torch.nn.Parameter(
                scale.reshape(scale.shape[0], -1).float().contiguous(), requires_grad=False))
            delattr(layer, f"{stem}_weight_offset")
        del self._loaded

    @staticmethod
    def int8_experts(layer, expanded_x: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        """Expert outputs [T*k, H] for the routed rows ``expanded_x`` [T*k, H] (module doc)."""
        xq, x_scale = ascend_ops.dynamic_quant(expanded_x)
        h = ascend_ops.grouped_quant_matmul(xq, layer.w13_weight.transpose(1, 2),
                                            layer.w13_weight_scale, x_scale, counts, expanded_x.dtype)
        aq, a_scale = ascend_ops.dynamic_quant(ascend_ops.swiglu(h))
        return ascend_ops.grouped_quant_matmul(aq, layer.w2_weight.transpose(1, 2),
                                               layer.w2_weight_scale, a_scale, counts,
                                               expanded_x.dtype)

    def apply_monolithic(self, layer, x, router_logits, input_ids=None):
        return ascend_moe_forward(layer, x, router_logits)
