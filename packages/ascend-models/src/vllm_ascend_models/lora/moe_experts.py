# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""LoRA on the routed experts of the Ascend MoE method (``vllm_ascend_models/moe.py``).

vLLM 0.32 wraps a MoE layer for LoRA with ``FusedMoEWithLoRA`` (``vllm/lora/layers/fused_moe.py``):
it stacks the adapters per (adapter slot, expert) -- ``w13_lora_a_stacked`` (gate, up)
``[max_loras, E, r, H]``, ``w13_lora_b_stacked`` ``[max_loras, E, I, r]``,
``w2_lora_a_stacked`` ``[max_loras, E, r, I]``, ``w2_lora_b_stacked`` ``[max_loras, E, H, r]``,
the PEFT scaling already folded into B -- and then requires a modular fused-MoE kernel that adds
the products inside its grouped GEMMs (``LoRAExpertsMixin``). The Ascend method is monolithic
(routing and expert GEMMs in one call), so ``AscendFusedMoEWithLoRA`` keeps vLLM's weight
stacking, loading and TP slicing (inherited) and skips the modular-kernel set-up; the monolithic
forward adds the products itself (:func:`add_expert_lora`):

    h[row]  += B13[slot, e] (A13[slot, e] x[row])   per slice (gate, up), before SwiGLU
    y[row]  += B2[slot, e] (A2[slot, e] act[row])   before the routing weights are applied

for every routed row (token t, expert e) whose token has adapter ``slot`` (-1: none). Each is one
``ascend_ops.lora_linear`` over ``max_loras * E`` flattened weight slots with row index
``slot * E + e`` (device tensors only, so captured graphs follow the current adapters). This is
the per-expert LoRA of HF/PEFT: the expert's gate/up/down projection W gets W + s * B A.

Not covered (ValueError at start-up, naming the setting): expert parallelism, non-gated MoE,
``fully_sharded_loras``, ``enable_moe_shared_loras``.
"""

from __future__ import annotations

import ascend_ops
import torch

_installed = False


def _is_ascend_monolithic(runner) -> bool:
    quant = getattr(getattr(runner, "routed_experts", None), "quant_method", None)
    return type(quant).__qualname__ == "AscendUnquantizedFusedMoEMethod"


def _layer_class():
    from vllm.lora.layers import FusedMoEWithLoRA
    from vllm.lora.layers.base import BaseLayerWithLoRA
    from vllm.lora.layers.utils import _get_lora_device
    from vllm.model_executor.custom_op import maybe_get_oot_by_class
    from vllm.model_executor.layers.fused_moe import MoERunner

    class AscendFusedMoEWithLoRA(FusedMoEWithLoRA):
        """``FusedMoEWithLoRA`` for the monolithic Ascend MoE method (module docstring)."""

        def __init__(self, base_layer) -> None:  # noqa: D107 -- replaces the modular set-up
            BaseLayerWithLoRA.__init__(self)
            self.base_layer = base_layer
            self.moe_config = base_layer.moe_config
            self._shared_experts = base_layer._shared_experts
            par = self.moe_config.moe_parallel_config
            if par.use_ep:
                raise ValueError("LoRA on MoE experts with enable_expert_parallel is not "
                                 "supported on Ascend; disable expert parallelism or restrict "
                                 "LoRA with --lora-target-modules")
            if not self.moe_config.is_act_and_mul:
                raise ValueError("LoRA on non-gated MoE experts is not supported on Ascend; "
                                 "restrict LoRA with --lora-target-modules")
            self.tp_size, self.tp_rank = par.tp_size, par.tp_rank
            self.device = _get_lora_device(base_layer)
            self._enable_aux_cuda_stream = False
            self._lora_stream = self._events = None
            self._w13_slices = 2
            self.enable_moe_shared_loras = False
            self.n_slices = self.local_num_experts * 3
            # a plain attribute (not a registered submodule): the forward of the routed experts
            # (vllm_ascend_models/moe.py) finds the adapters here
            object.__setattr__(base_layer.routed_experts, "_ascend_expert_lora", self)

        def create_lora_weights(self, max_loras, lora_config, model_config=None) -> None:
            for option in ("fully_sharded_loras", "enable_moe_shared_loras"):
                if getattr(lora_config, option, False):
                    raise ValueError(f"LoRA on MoE experts with {option}=True is not supported "
                                     "on Ascend; switch it off")
            super().create_lora_weights(max_loras, lora_config, model_config)

        def set_lora(self, index, lora_a, lora_b) -> None:
            """vLLM's ``set_lora`` takes ``[w1, w2, w3]``, each ``[E, r, in]`` / ``[E, out, r]``
            (``PackedLoRALayerWeights.pack_moe``, vllm/lora/lora_weights.py). vLLM's warm-up
            LoRA (``LoRAModelManager.create_dummy_lora``, vllm/lora/model_manager.py) packs
            that way only for a class named exactly ``FusedMoEWithLoRA``; for this subclass it
            passes one 2-D tensor per (expert, projection), ordered w1, w2, w3 per expert (the
            layout of ``lora_a_stacked``). Those are stacked per projection here, as
            ``pack_moe`` does. (vLLM 0.34's MRv2 activates that warm-up LoRA in every dummy
            run, ``GPUModelRunner._dummy_run``; the V1 runner's profiling pass did not.)"""
            if isinstance(lora_a, list) and lora_a and lora_a[0].dim() == 2:
                lora_a = [torch.stack(lora_a[k::3]) for k in range(3)]
                lora_b = [torch.stack(lora_b[k::3]) for k in range(3)]
            super().set_lora(index, lora_a, lora_b)

        def set_mapping(self, punica_wrapper) -> None:
            BaseLayerWithLoRA.set_mapping(self, punica_wrapper)

        @classmethod
        def can_replace_layer(cls, source_layer, lora_config, packed_modules_list,
                              model_config=None) -> bool:
            return (isinstance(source_layer, maybe_get_oot_by_class(MoERunner))
                    and len(packed_modules_list) == 2 and _is_ascend_monolithic(source_layer))

    AscendFusedMoEWithLoRA.__module__ = __name__
    return AscendFusedMoEWithLoRA


# patch: lora-moe-monolithic (declared in vllm_ascend_platform.patches.registry; docs/architecture.md)
def install_expert_lora() -> bool:
    """Put ``AscendFusedMoEWithLoRA`` first in vLLM's LoRA layer classes
    (``vllm.lora.utils._all_lora_classes``, tried in order by ``from_layer``), so MoE runners
    with the Ascend method get it instead of ``FusedMoEWithLoRA``. Idempotent; True when newly
    installed."""
    global _installed
    import vllm.lora.utils as lora_utils

    if _installed:
        return False
    lora_utils._all_lora_classes = (_layer_class(), *lora_utils._all_lora_classes)
    _installed = True
    return True


def expert_lora_slots(layer, row_idx: torch.Tensor, expert_ids: torch.Tensor,
                      num_tokens: int, num_experts: int) -> torch.Tensor:
    """Flattened weight slot per routed row: ``adapter_slot * num_experts + expert`` or -1.

    ``row_idx`` [T*k] (``ascend_ops.moe_init_routing``'s ``expanded_row_idx``: entry ``j*T + t``
    is the row of token t's j-th choice), ``expert_ids`` [T*k] local expert of each row; the
    adapter slot per token is the punica wrapper's device index buffer. Returns int64 [T*k].
    """
    token_slots = layer.punica_wrapper.token_lora_indices_for(num_tokens).long()
    rows = row_idx.numel()
    token_of_row = torch.empty(rows, dtype=torch.long, device=row_idx.device)
    token_of_row[row_idx.long()] = torch.arange(rows, device=row_idx.device) % num_tokens
    slot = token_slots[token_of_row]
    flat = slot * num_experts + expert_ids.long()
    return torch.where(slot >= 0, flat, torch.full_like(flat, -1))


def _flat(w: torch.Tensor) -> torch.Tensor:
    """[max_loras, E, m, n] -> [max_loras * E, 1, m, n] (the ops' stacked-slot layout)."""
    return w.reshape(w.shape[0] * w.shape[1], 1, w.shape[2], w.shape[3])


def add_expert_lora_w13(layer, h: torch.Tensor, x: torch.Tensor, slots: torch.Tensor) -> None:
    """``h`` [rows, 2I] (gate | up, before SwiGLU) += the adapters' products of ``x`` [rows, H]."""
    inter = h.shape[-1] // 2
    for i, (a, b) in enumerate(zip(layer.w13_lora_a_stacked, layer.w13_lora_b_stacked,
                                   strict=True)):
        ascend_ops.lora_linear(h, x, _flat(a), _flat(b), slots, 1.0, i * inter, inter)


def add_expert_lora_w2(layer, y: torch.Tensor, act: torch.Tensor, slots: torch.Tensor) -> None:
    """``y`` [rows, H] (expert outputs, before routing weights) += products of ``act`` [rows, I]."""
    a, b = layer.w2_lora_a_stacked[0], layer.w2_lora_b_stacked[0]
    ascend_ops.lora_linear(y, act, _flat(a), _flat(b), slots, 1.0, 0, y.shape[-1])
