# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""int8 W8A8 compressed-tensors checkpoints through ``ascend_ops``: a vLLM int8 scaled-mm kernel.

vLLM's ``compressed-tensors`` config (``CompressedTensorsW8A8Int8``) picks its GEMM from the
int8 kernel list of the current platform (``init_int8_linear_kernel``, vLLM
``model_executor/kernels/linear/__init__.py``); ``register_linear_kernel(cls, PlatformEnum.OOT,
"int8")`` is that list's documented extension point, so the checkpoint's own loading code runs
unchanged and only the GEMM is ours.

Layer tensors (vLLM's compressed-tensors W8A8 int8 scheme): ``weight`` int8 [N, K];
``weight_scale`` float32 [N, 1] (channel strategy) or one per fused part (tensor strategy);
``input_scale`` float32 per part for a static input scheme. Supported here: symmetric inputs,
per-token dynamic (``ascend_ops.dynamic_quant``, torch_npu ``npu_dynamic_quant``) or per-tensor
static (``ascend_ops.quantize`` with ``1 / input_scale``, torch_npu ``npu_quantize``), then
``ascend_ops.quant_matmul`` (``npu_quant_matmul``) with the per-channel weight scale (times the
static input scale). An asymmetric input scheme is refused by ``can_implement`` naming it, and
vLLM then reports that no kernel can run the layer.
"""

from __future__ import annotations

import ascend_ops
import torch
from vllm.model_executor.kernels.linear.scaled_mm.ScaledMMLinearKernel import (
    Int8ScaledMMLinearKernel,
    Int8ScaledMMLinearLayerConfig,
)


def _per_channel(scale: torch.Tensor, widths: list[int]) -> torch.Tensor:
    """[N] float32 from a [N, 1] channel scale or one scale per fused part."""
    scale = scale.detach().float().reshape(-1)
    if scale.numel() == sum(widths):
        return scale.contiguous()
    if scale.numel() != len(widths):
        raise ValueError(f"weight_scale has {scale.numel()} values for parts {widths}")
    return torch.cat([s.expand(w) for s, w in zip(scale, widths, strict=True)]).contiguous()


class AscendInt8ScaledMMLinearKernel(Int8ScaledMMLinearKernel):
    """Symmetric W8A8 int8 GEMM over ``ascend_ops`` (module doc)."""

    @classmethod
    def is_supported(cls, compute_capability: int | None = None) -> tuple[bool, str | None]:
        from vllm.platforms import current_platform

        if not current_platform.is_out_of_tree():
            return False, "runs on the Ascend (out-of-tree) platform only"
        return True, None

    @classmethod
    def can_implement(cls, c: Int8ScaledMMLinearLayerConfig) -> tuple[bool, str | None]:
        if not c.input_symmetric:
            return False, ("asymmetric int8 activations (an input zero point) are not supported "
                           "on Ascend; quantize activations symmetrically")
        return True, None

    def process_weights_after_loading(self, layer: torch.nn.Module) -> None:
        w_name, s_name, i_name, _, _ = self.layer_param_names
        weight = getattr(layer, w_name)
        if weight.dtype != torch.int8:
            raise ValueError(f"compressed-tensors weight must be int8 [N, K], got {weight.dtype}")
        widths = list(getattr(layer, "logical_widths", [weight.shape[0]]))
        scale = _per_channel(getattr(layer, s_name), widths)
        if self.config.is_static_input_scheme:
            in_scale = getattr(layer, i_name).detach().float().reshape(-1).max()
            layer.ascend_in_scale = (1.0 / in_scale).reshape(1)
            scale = scale * in_scale
        setattr(layer, w_name, torch.nn.Parameter(weight.data.t(), requires_grad=False))  # [K, N]
        setattr(layer, s_name, torch.nn.Parameter(scale, requires_grad=False))
        for name in (i_name, "input_zero_point", "azp_adj"):
            if hasattr(layer, name):
                delattr(layer, name)

    def apply_weights(self, layer: torch.nn.Module, x: torch.Tensor,
                      bias: torch.Tensor | None = None) -> torch.Tensor:
        w_name, s_name, _, _, _ = self.layer_param_names
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])
        if self.config.is_static_input_scheme:
            xq = ascend_ops.quantize(x2, layer.ascend_in_scale.to(x.dtype))
            token_scale = None
        else:
            xq, token_scale = ascend_ops.dynamic_quant(x2)
        out = ascend_ops.quant_matmul(xq, getattr(layer, w_name), getattr(layer, s_name),
                                      token_scale, None, x.dtype)
        if bias is not None:
            out = out + bias
        return out.view(*shape[:-1], out.shape[-1])


def register_int8_kernel() -> None:
    """Put the kernel in vLLM's int8 list for out-of-tree platforms (idempotent)."""
    from vllm.model_executor.kernels import linear
    from vllm.platforms.interface import PlatformEnum

    if AscendInt8ScaledMMLinearKernel not in linear._POSSIBLE_INT8_KERNELS.get(PlatformEnum.OOT,
                                                                                []):
        linear.register_linear_kernel(AscendInt8ScaledMMLinearKernel, PlatformEnum.OOT, "int8")
