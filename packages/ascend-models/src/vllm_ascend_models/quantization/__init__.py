"""Ascend quantization (``quantization="ascend"``): msModelSlim W8A8 / W8A8_DYNAMIC checkpoints.

:func:`register_quantization` adds :class:`AscendQuantConfig` to vLLM's quantization-config
registry (``vllm.model_executor.layers.quantization.register_quantization_config``) under the name
vllm-ascend uses, ``"ascend"``; the models layer's ``register()`` calls it.
"""

from __future__ import annotations

QUANT_METHOD = "ascend"
"""The quantization method name (``LLM(..., quantization="ascend")``, ``--quantization ascend``)."""

DESCRIPTION_FILE = "quant_model_description.json"
"""The per-tensor scheme file msModelSlim's ``ascendv1_saver`` writes next to the weights."""

_registered = False


def register_quantization() -> None:
    """Register ``"ascend"`` with vLLM's quantization registry (idempotent)."""
    global _registered
    if _registered:
        return
    from vllm.model_executor.layers.quantization import register_quantization_config

    from vllm_ascend_models.quantization.config import AscendQuantConfig

    register_quantization_config(QUANT_METHOD)(AscendQuantConfig)
    _registered = True


__all__ = ["DESCRIPTION_FILE", "QUANT_METHOD", "register_quantization"]
