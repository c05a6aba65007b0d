"""``AscendQuantConfig``: vLLM ``QuantizationConfig`` for msModelSlim's Ascend format.

msModelSlim (``msmodelslim quant ... `` with an ``ascendv1_saver``) writes, next to the
safetensors, ``quant_model_description.json``: top-level ``model_quant_type`` and ``version``,
and one entry per saved tensor naming its scheme (``"W8A8"``, ``"W8A8_DYNAMIC"`` or ``"FLOAT"``),
e.g. ``"model.layers.0.self_attn.q_proj.weight": "W8A8_DYNAMIC"`` (format: msModelSlim
``core/quant_service/modelslim_v1/save/ascendv1.py``; vllm-ascend reads the same file).
Each linear layer's scheme is the one of its ``<prefix>.weight`` entry; a fused vLLM layer
(``qkv_proj``, ``gate_up_proj``) takes the scheme its parts share. A scheme we do not implement,
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

from vllm_ascend_models.quantization import DESCRIPTION_FILE, QUANT_METHOD

SUPPORTED_SCHEMES = ("W8A8", "W8A8_DYNAMIC", "FLOAT")
#: description keys that are not tensor entries
_META_KEYS = ("model_quant_type", "version", "metadata", "group_size", "optional")


class AscendQuantConfig(QuantizationConfig):
    """Per-layer schemes from an msModelSlim ``quant_model_description.json`` (see module doc)."""

    def __init__(self, description: dict[str, Any]):
        super().__init__()
        self.description = description
        self.model_quant_type = description.get("model_quant_type")
        for key, scheme in description.items():
            if key in _META_KEYS or not isinstance(scheme, str):
                continue
            if scheme not in SUPPORTED_SCHEMES:
                raise ValueError(
                    f"{DESCRIPTION_FILE}: tensor {key!r} has quantization scheme {scheme!r}, which "
                    f"quantization={QUANT_METHOD!r} does not support (supported: "
                    f"{', '.join(SUPPORTED_SCHEMES)}); re-quantize with msModelSlim using a W8A8 or "
                    "W8A8_DYNAMIC config")

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
        return [DESCRIPTION_FILE]

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
        if not isinstance(layer, LinearBase):
            return None  # embeddings, lm_head, attention: float
        from vllm_ascend_models.quantization.linear import (
            AscendW8A8DynamicLinearMethod,
            AscendW8A8LinearMethod,
        )

        scheme = self.scheme_of(prefix)
        if scheme == "W8A8":
            return AscendW8A8LinearMethod(prefix)
        if scheme == "W8A8_DYNAMIC":
            return AscendW8A8DynamicLinearMethod(prefix)
        return UnquantizedLinearMethod()
