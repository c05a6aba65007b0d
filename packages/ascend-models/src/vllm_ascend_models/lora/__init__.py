# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""LoRA serving on Ascend: the punica wrapper vLLM's LoRA layers call (``punica.PunicaWrapperNPU``),
named by ``NPUPlatform.get_punica_wrapper``."""

PUNICA_WRAPPER = "vllm_ascend_models.lora.punica.PunicaWrapperNPU"
