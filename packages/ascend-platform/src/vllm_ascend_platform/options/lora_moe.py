# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Start-up check: LoRA that would reach MoE experts vLLM cannot wrap on Ascend.

vLLM 0.32 serves LoRA on MoE experts through ``FusedMoEWithLoRA`` / ``FusedMoE3DWithLoRA``
(``vllm/lora/layers/fused_moe.py``), which require a *modular* fused-MoE kernel whose experts
class mixes in ``LoRAExpertsMixin``. The Ascend MoE method (models layer) is *monolithic*; the
models layer puts its own ``AscendFusedMoEWithLoRA`` first in vLLM's LoRA classes
(``lora-moe-monolithic`` patch, docs/lora.md) for MoE models whose adapters are stored per
expert (2D). For the cases it does not take (3D expert weights on disk, ``FusedMoE3DWithLoRA``;
shared MoE LoRAs) vLLM's own class would stop on a bare ``AssertionError`` while the model is
wrapped. This check runs first, picks the class the way ``vllm.lora.utils.from_layer`` does, with
vLLM's own module filters (``is_supported_lora_module``, ``is_in_target_modules``), and names the
option that avoids it: ``--lora-target-modules`` (``LLM(lora_target_modules=...)``), which keeps
LoRA on the attention and dense layers of the same model.
"""

from __future__ import annotations

from typing import Any

OPTION_HINT = ("--lora-target-modules (LLM(lora_target_modules=[...])), e.g. "
               "q_proj k_proj v_proj o_proj")


def moe_layers_wrapped_by_lora(model: Any, lora_config: Any) -> list[str]:
    """Names of the MoE runners of ``model`` that vLLM's LoRA manager would wrap with
    vLLM's ``FusedMoEWithLoRA`` / ``FusedMoE3DWithLoRA`` although their experts' quant method
    is monolithic (the classes that need a modular kernel).

    ``model``: the vLLM model (``nn.Module``) before ``create_lora_manager``; ``lora_config``:
    vLLM's ``LoRAConfig`` (``target_modules`` None = every module the model supports).
    Mirrors ``LoRAModelManager._create_lora_modules`` (``vllm/lora/model_manager.py``).
    """
    import vllm.lora.utils as lora_utils
    from vllm.lora.layers import FusedMoE3DWithLoRA, FusedMoEWithLoRA
    from vllm.lora.utils import (
        get_supported_lora_modules,
        is_in_target_modules,
        is_moe_model,
        is_supported_lora_module,
        process_packed_modules_mapping,
    )
    from vllm.model_executor.layers.fused_moe import MoERunner

    if not is_moe_model(model):
        return []
    targets = lora_config.target_modules
    supported = get_supported_lora_modules(model)
    packed = process_packed_modules_mapping(
        model, force_2d_moe=lora_config.enable_mixed_moe_lora_format,
        enable_moe_shared_loras=lora_config.enable_moe_shared_loras)
    # the packed list LoRAModelManager passes for a MoE runner (3D = gate/up fused on disk)
    packed_list = (["w13"] if getattr(model, "is_3d_moe_weight", False)
                   and not lora_config.enable_mixed_moe_lora_format
                   and not lora_config.enable_moe_shared_loras else ["w1", "w3"])
    found = []
    for name, module in model.named_modules(remove_duplicate=False):
        if not isinstance(module, MoERunner):
            continue
        quant = getattr(getattr(module, "routed_experts", None), "quant_method", None)
        if not getattr(quant, "is_monolithic", False):
            continue
        # the class vLLM's from_layer would pick: the models layer may put a class for the
        # monolithic method first (lora-moe-monolithic patch); only vLLM's own two fail
        chosen = next((cls for cls in lora_utils._all_lora_classes
                       if cls.can_replace_layer(source_layer=module, lora_config=lora_config,
                                                packed_modules_list=packed_list,
                                                model_config=None)), None)
        if chosen not in (FusedMoEWithLoRA, FusedMoE3DWithLoRA):
            continue
        if targets is None:
            wrapped = is_supported_lora_module(name, module, supported)
        else:
            wrapped = is_in_target_modules(name, targets, packed)
        if wrapped:
            found.append(name)
    return found


def refuse_expert_lora(model: Any, lora_config: Any) -> None:
    """Raise ``ValueError`` naming ``--lora-target-modules`` when LoRA would reach the routed
    experts of a monolithic MoE layer (see the module docstring)."""
    found = moe_layers_wrapped_by_lora(model, lora_config)
    if not found:
        return
    targets = lora_config.target_modules
    raise ValueError(
        f"LoRA on MoE experts is not supported on Ascend for this model ({len(found)} MoE "
        f"layers, first {found[0]!r}; lora target_modules={targets!r}): vLLM 0.32 would wrap "
        "them with its modular-kernel expert LoRA (3D expert weights or shared MoE LoRAs), and "
        "the Ascend MoE method is monolithic. Restrict LoRA to the other layers with "
        f"{OPTION_HINT}, without 'experts'.")
