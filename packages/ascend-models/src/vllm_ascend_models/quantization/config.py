# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``AscendQuantConfig``: vLLM ``QuantizationConfig`` for msModelSlim's Ascend format.

msModelSlim (``msmodelslim quant ... `` with an ``ascendv1_saver``) writes, next to the
safetensors, ``quant_model_description.json``: top-level ``model_quant_type`` and ``version``,
and one entry per saved tensor naming its scheme (``"W8A8"``, ``"W8A8_DYNAMIC"`` or ``"FLOAT"``),
e.g. ``"model.layers.0.self_attn.q_proj.weight": "W8A8_DYNAMIC"`` (format: msModelSlim
``core/quant_service/modelslim_v1/save/ascendv1.py``; vllm-ascend reads the same file).
Each linear layer's scheme is the one of its ``<prefix>.weight`` entry; a fused vLLM layer
(``qkv_proj``, ``gate_up_proj``) takes the scheme its parts share; routed MoE experts take the
scheme all their per-expert entries share (``moe.py``: W8A8_DYNAMIC or FLOAT). A scheme we do not implement,
or parts with different schemes, raise ``ValueError`` naming the tensor and the scheme.
"""

from __future__ import annotations

from typing import Any

import torch
from vllm.model_executor.layers.linear import LinearBase, UnquantizedLinearMethod
from vllm.model_executor.layers.quantization.base_config import (
    QuantizationConfig,
    QuantizeMethodBase,
)

from vllm_ascend_models.quantization.names import DESCRIPTION_FILE, QUANT_METHOD

SUPPORTED_SCHEMES = ("W8A8", "W8A8_DYNAMIC", "FLOAT")
#: description keys that are not tensor entries
_META_KEYS = ("model_quant_type", "version", "metadata", "group_size", "optional")


class AscendQuantConfig(QuantizationConfig):
    """Per-layer schemes from an msModelSlim ``quant_model_description.json`` (see module doc)."""

    def __init__(self, description: dict[str, Any] | None = None):
        super().__init__()
        self.description: dict[str, Any] = {}
        self.model_quant_type = None
        if description is not None:
            self._set_description(description)

    def _set_description(self, description: dict[str, Any]) -> None:
        if not isinstance(description, dict):
            raise ValueError(f"{DESCRIPTION_FILE} must hold a JSON object, got "
                             f"{type(description).__name__}")
        for key, scheme in description.items():
            if key in _META_KEYS or not isinstance(scheme, str):
                continue
            if scheme not in SUPPORTED_SCHEMES:
                raise ValueError(
                    f"{DESCRIPTION_FILE}: tensor {key!r} has quantization scheme {scheme!r}, which "
                    f"quantization={QUANT_METHOD!r} does not support (supported: "
                    f"{', '.join(SUPPORTED_SCHEMES)}); re-quantize with msModelSlim using a W8A8 or "
                    "W8A8_DYNAMIC config")
        self.description = description
        self.model_quant_type = description.get("model_quant_type")

    def __repr__(self) -> str:
        return f"AscendQuantConfig(model_quant_type={self.model_quant_type!r})"

    def get_name(self) -> str:
        return QUANT_METHOD

    def get_supported_act_dtypes(self) -> list[torch.dtype]:
        return [torch.float16, torch.bfloat16, torch.float32]

    @classmethod
    def get_min_capability(cls) -> int:
        return 0  # not a CUDA method; vLLM asks only on CUDA/ROCm

    @staticmethod
    def get_config_filenames() -> list[str]:
        # none: vLLM's get_quant_config then builds AscendQuantConfig() and calls
        # maybe_update_config with the model path, where a missing description is reported
        # with what to do (vLLM alone would say only "Cannot find the config file")
        return []

    def maybe_update_config(self, model_name: str, hf_config: Any = None,
                            revision: str | None = None) -> None:
        """Read ``quant_model_description.json`` of ``model_name`` (vLLM ``QuantizationConfig``
        hook, called once the config is built).

        Raises:
            ValueError: the checkpoint has no description (a float checkpoint served with
                ``quantization="ascend"``), or the description names an unsupported scheme.
        """
        if self.description:
            return
        from vllm.transformers_utils.repo_utils import file_or_path_exists, get_hf_file_to_dict

        if not file_or_path_exists(model_name, DESCRIPTION_FILE, revision):
            raise ValueError(
                f"quantization={QUANT_METHOD!r}: {model_name} has no {DESCRIPTION_FILE}, the "
                "per-tensor scheme file msModelSlim writes next to the quantized weights (a float "
                f"checkpoint?). Serve a float checkpoint without quantization={QUANT_METHOD!r}, "
                "or quantize it with msModelSlim first (docs/quantization.md)")
        self._set_description(get_hf_file_to_dict(DESCRIPTION_FILE, model_name,
                                                  revision or "main"))

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> AscendQuantConfig:
        return cls(config)

    def scheme_of(self, prefix: str) -> str:
        """The scheme of the linear layer at vLLM module path ``prefix`` (see module doc).

        Raises ValueError when a part is missing from the description or the parts disagree.
        """
        base, _, name = prefix.rpartition(".")
        parts = self.packed_modules_mapping.get(name, [name])
        schemes = {}
        for part in parts:
            key = f"{base}.{part}.weight" if base else f"{part}.weight"
            if key not in self.description:
                raise ValueError(
                    f"{DESCRIPTION_FILE} has no entry for {key!r} (layer {prefix!r}); the "
                    "description does not match this model")
            schemes[key] = self.description[key]
        if len(set(schemes.values())) > 1:
            listed = ", ".join(f"{k}: {v}" for k, v in schemes.items())
            raise ValueError(
                f"layer {prefix!r} fuses parts with different quantization schemes ({listed}); "
                "vLLM runs them as one matrix, so they must share one scheme")
        return next(iter(schemes.values()))

    def get_quant_method(self, layer: torch.nn.Module, prefix: str) -> QuantizeMethodBase | None:
        from vllm.model_executor.layers.fused_moe import RoutedExperts

        if isinstance(layer, RoutedExperts):
            from vllm_ascend_models.quantization.moe import (
                AscendW8A8DynamicFusedMoEMethod,
                experts_scheme,
            )

            projs = (layer.ckpt_gate_proj_name, layer.ckpt_up_proj_name, layer.ckpt_down_proj_name)
            if experts_scheme(self.description, prefix, layer.global_num_experts,
                              projs) == "W8A8_DYNAMIC":
                return AscendW8A8DynamicFusedMoEMethod(layer.moe_config, prefix)
            return None  # float experts: vLLM's unquantized method (Ascend's, out of tree)
        if not isinstance(layer, LinearBase):
            return None  # embeddings, lm_head, attention: float
        from vllm_ascend_models.quantization.linear import (
            AscendW8A8DynamicLinearMethod,
            AscendW8A8LinearMethod,
        )

        scheme = self.scheme_of(prefix)
        name = prefix.rpartition(".")[2]
        parts = list(self.packed_modules_mapping.get(name, [name]))
        if scheme == "W8A8":
            return AscendW8A8LinearMethod(prefix, parts)
        if scheme == "W8A8_DYNAMIC":
            return AscendW8A8DynamicLinearMethod(prefix, parts)
        return UnquantizedLinearMethod()
