"""Start-up check: LoRA on the routed experts of a MoE layer is not served on Ascend.

vLLM 0.32 serves LoRA on MoE experts through ``FusedMoEWithLoRA`` (``vllm/lora/layers/
fused_moe.py``), which requires a *modular* fused-MoE kernel whose experts class mixes in
``LoRAExpertsMixin`` (``vllm/model_executor/layers/fused_moe/experts/lora_experts_mixin.py``)
and calls the punica wrapper's ``add_lora_w13`` / ``add_lora_w2`` inside the grouped GEMMs.
The Ascend MoE method (models layer, docs/architecture.md) is *monolithic*: it takes the router
logits and runs routing and the expert GEMMs itself, so vLLM's wrapper stops on a bare
``AssertionError`` while the model is wrapped. This check runs first, with vLLM's own module
filters (``vllm/lora/utils.py``: ``is_supported_lora_module``, ``is_in_target_modules``), and
names the option that avoids it: ``--lora-target-modules`` (``LLM(lora_target_modules=...)``),
which keeps LoRA on the attention and dense layers of the same model.
"""

from __future__ import annotations

from typing import Any

OPTION_HINT = ("--lora-target-modules (LLM(lora_target_modules=[...])), e.g. "
               "q_proj k_proj v_proj o_proj")


def moe_layers_wrapped_by_lora(model: Any, lora_config: Any) -> list[str]:
    """Names of the MoE runners of ``model`` that vLLM's LoRA manager would wrap with
    ``FusedMoEWithLoRA`` although their experts' quant method is monolithic.

    ``model``: the vLLM model (``nn.Module``) before ``create_lora_manager``; ``lora_config``:
    vLLM's ``LoRAConfig`` (``target_modules`` None = every module the model supports).
    Mirrors ``LoRAModelManager._create_lora_modules`` (``vllm/lora/model_manager.py``).
    """
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
    found = []
    for name, module in model.named_modules(remove_duplicate=False):
        if not isinstance(module, MoERunner):
            continue
        quant = getattr(getattr(module, "routed_experts", None), "quant_method", None)
        if not getattr(quant, "is_monolithic", False):
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
        f"LoRA on MoE experts is not supported on Ascend ({len(found)} MoE layers, first "
        f"{found[0]!r}; lora target_modules={targets!r}): vLLM 0.32 applies expert LoRA only "
        "inside a modular fused-MoE kernel, and the Ascend MoE method is monolithic. Restrict "
        f"LoRA to the other layers with {OPTION_HINT}, without 'experts'.")
