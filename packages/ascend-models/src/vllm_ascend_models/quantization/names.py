# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The names the Ascend quantization method is known by: its method name, its description file and
the methods this layer serves. A leaf module (no imports), shared by the package's registration
and by ``config.py`` / ``moe.py`` without importing each other.
"""

from __future__ import annotations

QUANT_METHOD = "ascend"
"""The quantization method name (``LLM(..., quantization="ascend")``, ``--quantization ascend``)."""

DESCRIPTION_FILE = "quant_model_description.json"
"""The per-tensor scheme file msModelSlim's ``ascendv1_saver`` writes next to the weights."""

SERVED_METHODS: tuple[str, ...] = (QUANT_METHOD, "compressed-tensors")
"""Every ``--quantization`` method this layer serves: ours, and vLLM's ``compressed-tensors``
config for int8 W8A8 checkpoints (its GEMM is ours, compressed_int8.py). Published in the
layer's description (role ``quantization_methods``); the platform refuses every other method."""
