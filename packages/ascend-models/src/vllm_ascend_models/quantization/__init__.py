# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Ascend quantization (``quantization="ascend"``): msModelSlim W8A8 / W8A8_DYNAMIC checkpoints.

:func:`register_quantization` adds :class:`AscendQuantConfig` to vLLM's quantization-config
registry (``vllm.model_executor.layers.quantization.register_quantization_config``) under the name
vllm-ascend uses, ``"ascend"``, and puts the int8 GEMM for vLLM's compressed-tensors W8A8 int8
scheme in vLLM's kernel list (compressed_int8.py); the models layer's ``register()`` calls it.
"""

from __future__ import annotations

from vllm_ascend_models.quantization.names import DESCRIPTION_FILE, QUANT_METHOD, SERVED_METHODS

_registered = False


def register_quantization() -> None:
    """Register ``"ascend"`` with vLLM's quantization registry (idempotent)."""
    global _registered
    if _registered:
        return
    from vllm.model_executor.layers.quantization import register_quantization_config

    from vllm_ascend_models.quantization.config import AscendQuantConfig

    register_quantization_config(QUANT_METHOD)(AscendQuantConfig)
    # int8 W8A8 compressed-tensors checkpoints: vLLM's own config, our GEMM
    from vllm_ascend_models.quantization.compressed_int8 import register_int8_kernel

    register_int8_kernel()
    _registered = True


__all__ = ["DESCRIPTION_FILE", "QUANT_METHOD", "SERVED_METHODS", "register_quantization"]
