# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Ascend MoE at vLLM 0.32's override point: the unquantized fused-MoE method.

vLLM 0.32 builds MoE layers with ``FusedMoEFactory`` (``fused_moe/layer.py``): a router, a
``RoutedExperts`` layer holding the expert weights and its quant method, and a ``MoERunner``.
On an out-of-tree platform ``select_unquantized_moe_backend`` returns ``OOT`` and builds no kernel
(``process_weights_after_loading`` leaves it to us). ``AscendUnquantizedFusedMoEMethod`` replaces
``UnquantizedFusedMoEMethod`` through ``CustomOp.register_oot`` and is *monolithic*: the runner
hands it the router logits (``MoERunner._apply_quant_method``), so routing runs on
``ascend_ops.moe_gating_top_k`` instead of vLLM's CUDA/CPU routers, and the experts run as
init routing -> grouped matmul (w13) with SwiGLU (``grouped_matmul_swiglu``: ``npu_grouped_matmul``
then ``npu_swiglu`` on the NPU, one pass on the native CPU backend) -> grouped matmul (w2) ->
finalize routing; with expert LoRA the w13 product and SwiGLU stay two ops (the adapters add to
the product in between).

Weights keep vLLM's layout: ``w13_weight`` [E_local, 2I, H] (gate rows then up rows), ``w2_weight``
[E_local, H, I]; the grouped matmuls read them transposed (views, no copy), so weight reloads
(RL updates) need nothing extra. On the native CPU backend (emulation)
``process_weights_after_loading`` also asks ``ascend_ops.pack_grouped_matmul_weight`` for a
prepacked copy of each (a CPU-only layout kept inside ascend_ops, rebuilt there when a weight is
rewritten); on an NPU or the simulated NPU the handles are -1 and the grouped matmuls read the
weights as they are. Expert parallelism: vLLM's ``expert_map`` (global id -> local slot or -1)
turns non-local choices into zero-weight rows; the runner's final all-reduce over the EP group
(our device communicator) sums the ranks' partial outputs.

Unsupported settings fail while the model is built (start-up), naming the setting.
"""

from __future__ import annotations

import logging
import weakref

import ascend_ops
import torch

logger = logging.getLogger("vllm.ascend.models")

SCORING_FUNCTIONS = ("softmax", "sigmoid")


def validate_moe_settings(*, num_experts: int, top_k: int, ep_size: int, scoring_func: str | None,
                          activation: str, num_expert_group: int | None = None,
                          topk_group: int | None = None) -> None:
    """Raise ValueError naming the HF/vLLM setting when our MoE path cannot run this layer."""
    if not 1 <= top_k <= num_experts:
        raise ValueError(
            f"MoE top-k (num_experts_per_tok={top_k}) must be between 1 and the number of experts "
            f"({num_experts}); fix the model config"
        )
    if ep_size > 1 and num_experts % ep_size:
        raise ValueError(
            f"number of experts ({num_experts}) is not divisible by the expert-parallel size "
            f"({ep_size} = tensor_parallel_size x data_parallel_size with enable_expert_parallel); "
            "choose a parallel size that divides it"
        )
    if scoring_func is not None and scoring_func not in SCORING_FUNCTIONS:
        raise ValueError(
            f"MoE scoring_func={scoring_func!r} is not supported on Ascend; supported: {SCORING_FUNCTIONS}"
        )
    if activation != "silu":
        raise ValueError(f"MoE activation {activation!r} is not supported on Ascend (supported: 'silu')")
    groups = num_expert_group or 1
    if groups > 1:
        if num_experts % groups:
            raise ValueError(f"n_group={groups} must divide the number of experts ({num_experts})")
        if not 1 <= (topk_group or 1) <= groups:
            raise ValueError(f"topk_group={topk_group} must be between 1 and n_group={groups}")


def validate_layer(layer, moe) -> None:
    """Raise ValueError naming the setting when ``ascend_moe_forward`` cannot run ``layer``
    (vLLM ``RoutedExperts``; ``moe`` its ``FusedMoEConfig``); called from ``create_weights``."""
    validate_moe_settings(
        num_experts=layer.global_num_experts,
        top_k=layer.top_k,
        ep_size=1,
        scoring_func=layer.scoring_func,
        activation=layer.activation.value,
        num_expert_group=layer.num_expert_group if layer.use_grouped_topk else None,
        topk_group=layer.topk_group if layer.use_grouped_topk else None,
    )
    if layer.custom_routing_function is not None:
        raise ValueError(
            "custom MoE routing functions (custom_routing_function, e.g. Llama 4) are not "
            "supported on Ascend yet"
        )
    if layer.apply_router_weight_on_input:
        raise ValueError("apply_router_weight_on_input=True is not supported on Ascend yet")
    if moe.has_bias:
        raise ValueError("MoE expert biases (has_bias) are not supported on Ascend yet")


def _method_class():
    from vllm.model_executor.layers.fused_moe.unquantized_fused_moe_method import (
        UnquantizedFusedMoEMethod,
    )

    class AscendUnquantizedFusedMoEMethod(UnquantizedFusedMoEMethod):
        """Unquantized MoE on ``ascend_ops`` (routing + grouped matmuls); monolithic."""

        def __init__(self, moe):
            super().__init__(moe)
            par = moe.moe_parallel_config
            validate_moe_settings(
                num_experts=moe.num_experts,
                top_k=moe.experts_per_token,
                ep_size=par.ep_size if par.use_ep else 1,
                scoring_func=None,
                activation=moe.activation.value,
            )
            if moe.is_lora_enabled:  # before vLLM's LoRA manager wraps the layers
                from vllm_ascend_models.lora.moe_experts import install_expert_lora

                install_expert_lora()

        @property
        def is_monolithic(self) -> bool:
            return True

        def create_weights(self, layer, *args, **kwargs):
            validate_layer(layer, self.moe)
            return super().create_weights(layer, *args, **kwargs)

        def process_weights_after_loading(self, layer) -> None:
            super().process_weights_after_loading(layer)
            pack_expert_weights(layer)

        def apply_monolithic(self, layer, x, router_logits, input_ids=None):
            return ascend_moe_forward(layer, x, router_logits)

    AscendUnquantizedFusedMoEMethod.__qualname__ = "AscendUnquantizedFusedMoEMethod"
    AscendUnquantizedFusedMoEMethod.__module__ = __name__
    return UnquantizedFusedMoEMethod, AscendUnquantizedFusedMoEMethod


NO_PACK = -1


def pack_expert_weights(layer) -> None:
    """Prepack ``layer``'s w13 / w2 experts for the native CPU backend (handles on the layer).

    Handles are -1 where ascend_ops makes no pack (NPU, simulated NPU, other backends). Packs
    made before (a second load) are released first; the packs' lifetime is tied to the layer."""
    for name in ("w13", "w2"):
        attr = f"ascend_{name}_handle"
        previous = layer.__dict__.get(attr, NO_PACK)
        if previous != NO_PACK:
            ascend_ops.release_grouped_matmul_weight(previous)
        weight = getattr(layer, f"{name}_weight")
        handle = NO_PACK
        if weight.dtype.is_floating_point and weight.dim() == 3 and not weight.is_meta:
            handle = ascend_ops.pack_grouped_matmul_weight(weight.transpose(1, 2))
        layer.__dict__[attr] = handle
        if handle != NO_PACK:
            weakref.finalize(layer, ascend_ops.release_grouped_matmul_weight, handle)


def expert_counts(expert_ids: torch.Tensor, num_experts: int) -> torch.Tensor:
    """Rows per expert, int64 [num_experts], for ids in [0, num_experts): a scatter-add on the
    device. Not ``torch.bincount``: its NPU kernel reads min and max on the host (two syncs per
    call, and fails inside graph capture; Ascend/op-plugin
    ``op_plugin/ops/opapi/BincountKernelNpuOpApi.cpp``)."""
    ids = expert_ids.long()
    return torch.zeros(num_experts, dtype=torch.int64, device=ids.device).scatter_add_(0, ids, torch.ones_like(ids))


def ascend_moe_forward(layer, x: torch.Tensor, router_logits: torch.Tensor) -> torch.Tensor:
    """Routed-experts output [T, H] for ``x`` [T, H] and ``router_logits`` [T, E_global].

    ``layer`` is vLLM's ``RoutedExperts`` (weights and routing settings). Non-local experts (EP)
    contribute zero; the runner reduces across ranks.
    """
    grouped = bool(layer.use_grouped_topk) and (layer.num_expert_group or 1) > 1
    weights, ids = ascend_ops.moe_gating_top_k(
        router_logits,
        layer.top_k,
        scoring=layer.scoring_func,
        renormalize=bool(layer.renormalize),
        num_expert_group=layer.num_expert_group if grouped else 1,
        topk_group=layer.topk_group if grouped else 1,
        routed_scaling_factor=float(layer.routed_scaling_factor),
        bias=layer.e_score_correction_bias,
    )
    expert_map = layer.expert_map
    if expert_map is not None:
        local = expert_map[ids.long()]
        weights = torch.where(local >= 0, weights, torch.zeros_like(weights))
        ids = local.clamp(min=0).to(torch.int32)
    num_local = layer.w13_weight.shape[0]
    expanded_x, row_idx, expanded_ids = ascend_ops.moe_init_routing(x, ids, num_experts=num_local)
    counts = expert_counts(expanded_ids, num_local)
    # W8A8_DYNAMIC experts (quantization/moe.py) bring their own expert step
    int8_experts = getattr(getattr(layer, "quant_method", None), "int8_experts", None)
    if int8_experts is not None:
        y = int8_experts(layer, expanded_x, counts)
        return ascend_ops.moe_finalize_routing(y, weights.to(y.dtype), row_idx, ids)
    w13 = layer.w13_weight.transpose(1, 2)  # [E, H, 2I]
    w2 = layer.w2_weight.transpose(1, 2)  # [E, I, H]
    h13 = layer.__dict__.get("ascend_w13_handle", NO_PACK)
    h2 = layer.__dict__.get("ascend_w2_handle", NO_PACK)
    lora = layer.__dict__.get("_ascend_expert_lora")  # set by AscendFusedMoEWithLoRA
    if lora is None:  # the w13 product and its SwiGLU in one op (one pass on the native backend)
        act = ascend_ops.grouped_matmul_swiglu(expanded_x, w13, counts, h13)
        y = ascend_ops.grouped_matmul(act, w2, counts, h2)
        return ascend_ops.moe_finalize_routing(y, weights.to(y.dtype), row_idx, ids)
    h = ascend_ops.grouped_matmul(expanded_x, w13, counts, h13)
    from vllm_ascend_models.lora import moe_experts

    slots = moe_experts.expert_lora_slots(lora, row_idx, expanded_ids, x.shape[0], num_local)
    moe_experts.add_expert_lora_w13(lora, h, expanded_x, slots)
    act = ascend_ops.swiglu(h)
    y = ascend_ops.grouped_matmul(act, w2, counts, h2)
    moe_experts.add_expert_lora_w2(lora, y, act, slots)
    return ascend_ops.moe_finalize_routing(y, weights.to(y.dtype), row_idx, ids)


_registered = False


def register_moe() -> bool:
    """Register ``AscendUnquantizedFusedMoEMethod`` for ``UnquantizedFusedMoEMethod`` (OOT slot).

    Idempotent; returns True when newly registered. RuntimeError when another plugin holds the slot.
    """
    global _registered
    from vllm.model_executor.custom_op import op_registry_oot

    upstream, ours = _method_class()
    slot = upstream.__name__
    holder = op_registry_oot.get(slot)
    if holder is not None:
        if getattr(holder, "__module__", None) == __name__:
            return False
        raise RuntimeError(
            f"vLLM CustomOp {slot!r} is already replaced out of tree by {holder.__module__}."
            f"{holder.__qualname__}; vllm-ascend-models cannot register its MoE method"
        )
    upstream.register_oot(ours)
    ours.name = upstream.name
    _registered = True
    logger.debug("Registered Ascend MoE method for %s", slot)
    return True
