# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""LoRA wrapping of the model runner (``NPUModelRunnerV2``, worker/model_runner_v2.py).

vLLM's ``LoRAModelRunnerMixin`` (``vllm/v1/worker/lora_model_runner_mixin.py``) builds the LoRA
manager in ``load_lora_model``; Model Runner V2's ``load_model``
(``vllm/v1/worker/gpu/model_runner.py``) calls it once the model is built. The LoRA
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
