# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""LoRA wrapping shared by both model runners (V1 ``NPUModelRunner`` on vLLM 0.33, MRv2
``NPUModelRunnerV2`` on vLLM 0.34).

vLLM's ``LoRAModelRunnerMixin`` (``vllm/v1/worker/lora_model_runner_mixin.py``, the same module
in both versions) builds the LoRA manager in ``load_lora_model``; both runners' ``load_model``
call it once the model is built (V1: ``NPUModelRunner.load_model`` on the host, vLLM's
``GPUModelRunner.load_model`` otherwise; MRv2: ``vllm/v1/worker/gpu/model_runner.py``). The LoRA
kernels are vLLM's punica interface, served by the platform's ``get_punica_wrapper`` (docs/lora.md):
nothing in MRv2's LoRA path (``vllm/v1/worker/gpu/lora_utils.py``) launches a Triton kernel.
"""

from __future__ import annotations

import torch
import torch.nn as nn
from vllm.config import VllmConfig
from vllm.v1.worker.lora_model_runner_mixin import LoRAModelRunnerMixin


class AscendLoRARunnerMixin(LoRAModelRunnerMixin):
    """Put first in a runner's bases: LoRA refused on monolithic MoE experts before vLLM wraps
    the model."""

    def load_lora_model(self, model: nn.Module, vllm_config: VllmConfig,
                        device: torch.device) -> nn.Module:
        """vLLM's LoRA wrapping, after refusing LoRA on monolithic MoE experts (ValueError
        naming ``--lora-target-modules``; ``options/lora_moe.py``)."""
        from vllm_ascend_platform.options.lora_moe import refuse_expert_lora

        refuse_expert_lora(model, vllm_config.lora_config)
        return super().load_lora_model(model, vllm_config, device)
