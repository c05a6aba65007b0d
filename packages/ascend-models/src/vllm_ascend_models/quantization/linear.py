# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Linear methods of ``quantization="ascend"``: W8A8 (static) and W8A8_DYNAMIC (per token).

Checkpoint tensors per linear (msModelSlim ``ascendv1_saver``,
``core/quant_service/modelslim_v1/save/ascendv1.py``):

* W8A8: ``weight`` int8 [out, in]; ``input_scale`` / ``input_offset`` float32 [1] (per-tensor
  asymmetric activation: ``x_q = round(x / input_scale + input_offset)``); ``deq_scale`` [out]
  = input_scale * weight_scale (float32, or int64 holding the float32 bit pattern when the source
  model was not bfloat16); ``quant_bias`` int32 [out] = round(bias / deq_scale - input_offset *
  sum_k weight). Output: ``(x_q @ weight.T + quant_bias) * deq_scale``.
* W8A8_DYNAMIC: ``weight`` int8 [out, in]; ``weight_scale`` / ``weight_offset`` float32 [out, 1]
  (symmetric: offset 0). Output: ``(x_q @ weight.T) * weight_scale * token_scale`` with
  ``x_q, token_scale = dynamic_quant(x)`` (per-token symmetric).

Weights stay int8 on the device ([in, out] after loading: ``npu_quant_matmul`` takes x2 [k, n]).
The ops are ``ascend_ops.quantize`` / ``dynamic_quant`` / ``quant_matmul`` (torch_npu
``npu_quantize`` / ``npu_dynamic_quant`` / ``npu_quant_matmul`` on the NPU).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ascend_ops
import torch
from vllm.model_executor.layers.linear import (
    LinearMethodBase,
    register_weight_loader_v2_supported_method,
)
from vllm.model_executor.parameter import (
    ChannelQuantScaleParameter,
    ModelWeightParameter,
    PerTensorScaleParameter,
)

from vllm_ascend_models.quantization.loading import FLOAT, LoadChecks, quant_bias_once


def decode_deq_scale(t: torch.Tensor) -> torch.Tensor:
    """msModelSlim ``deq_scale`` as float32: int64 values carry the float32 bit pattern
    (msModelSlim ``format/common/deqscale.py``: ``deqscale2int64``), float32 is kept."""
    if t.dtype == torch.int64:
        return (t & 0xFFFFFFFF).to(torch.int32).view(torch.float32)
    if t.dtype != torch.float32:
        raise ValueError(f"deq_scale must be float32 or int64 (float32 bits), got {t.dtype}")
    return t


class DeqScaleParameter(ChannelQuantScaleParameter):
    """Per-output-channel float32 ``deq_scale`` that decodes msModelSlim's int64 form on load."""

    def load_column_parallel_weight(self, loaded_weight, *a, **kw):
        super().load_column_parallel_weight(decode_deq_scale(loaded_weight), *a, **kw)

    def load_row_parallel_weight(self, loaded_weight, *a, **kw):
        super().load_row_parallel_weight(decode_deq_scale(loaded_weight), *a, **kw)

    def load_merged_column_weight(self, loaded_weight, **kw):
        super().load_merged_column_weight(decode_deq_scale(loaded_weight), **kw)

    def load_qkv_weight(self, loaded_weight, **kw):
        super().load_qkv_weight(decode_deq_scale(loaded_weight), **kw)


def _check_finite(prefix: str, name: str, t: torch.Tensor) -> None:
    if not torch.isfinite(t).all():
        raise ValueError(f"checkpoint tensor {prefix}.{name!r}: has non-finite values")


_VEC = lambda rows, cols: (rows,)  # noqa: E731  per output channel
_COL = lambda rows, cols: (rows, 1)  # noqa: E731  per output channel, msModelSlim [out, 1]
_ONE = lambda rows, cols: (1,)  # noqa: E731  per tensor
_MAT = lambda rows, cols: (rows, cols)  # noqa: E731  int8 weight [out, in]


class _AscendInt8Linear(LinearMethodBase):
    """Shared int8 weight handling of both schemes; ``parts`` are the checkpoint module names
    fused into the layer (``["q_proj", "k_proj", "v_proj"]`` for ``qkv_proj``). Scales are
    created float32 explicitly: vLLM builds the model under the model dtype as torch's default
    (bfloat16 / float16), and ``npu_quant_matmul`` takes float32 scales."""

    SPEC: dict = {}

    def __init__(self, prefix: str, parts: list[str] | None = None):
        self.prefix = prefix
        self.parts = parts or [prefix.rpartition(".")[2]]

    def _checks(self, layer, input_size, extra) -> tuple[LoadChecks, Callable[..., Any]]:
        checks = LoadChecks(self.prefix, self.parts, layer, input_size, self.SPEC)
        layer.ascend_load_checks = checks
        return checks, extra["weight_loader"]

    def _weight(self, layer, in_size, out_sizes, checks, loader):
        w = ModelWeightParameter(data=torch.zeros(sum(out_sizes), in_size, dtype=torch.int8),
                                 input_dim=1, output_dim=0,
                                 weight_loader=checks.wrap("weight", loader))
        layer.register_parameter("weight", w)

    def _finish_weight(self, layer) -> None:
        layer.ascend_load_checks.require_loaded()
        del layer.ascend_load_checks
        layer.weight = torch.nn.Parameter(layer.weight.data.t(), requires_grad=False)  # [in, out]


@register_weight_loader_v2_supported_method
class AscendW8A8LinearMethod(_AscendInt8Linear):
    """Static W8A8: per-tensor asymmetric activation, per-channel symmetric int8 weight."""

    SPEC = {"weight": ((torch.int8,), _MAT), "input_scale": ((FLOAT,), _ONE),
            "input_offset": ((FLOAT,), _ONE), "deq_scale": ((torch.int64, torch.float32), _VEC),
            "quant_bias": ((torch.int32,), _VEC)}

    def create_weights(self, layer, input_size_per_partition, output_partition_sizes, input_size,
                       output_size, params_dtype, **extra_weight_attrs):
        checks, loader = self._checks(layer, input_size, extra_weight_attrs)
        out = sum(output_partition_sizes)
        self._weight(layer, input_size_per_partition, output_partition_sizes, checks, loader)
        n_parts = len(output_partition_sizes)
        for name in ("input_scale", "input_offset"):
            layer.register_parameter(name, PerTensorScaleParameter(
                data=torch.zeros(n_parts, dtype=torch.float32),
                weight_loader=checks.wrap(name, loader)))
        layer.register_parameter("deq_scale", DeqScaleParameter(
            data=torch.zeros(out, dtype=torch.float32), output_dim=0,
            weight_loader=checks.wrap("deq_scale", loader)))
        layer.register_parameter("quant_bias", ChannelQuantScaleParameter(
            data=torch.zeros(out, dtype=torch.int32), output_dim=0,
            weight_loader=checks.wrap("quant_bias", loader)))
        layer.ascend_act_dtype = params_dtype

    def process_weights_after_loading(self, layer) -> None:
        self._finish_weight(layer)
        for name in ("input_scale", "input_offset", "deq_scale"):
            _check_finite(self.prefix, name, getattr(layer, name).data)
        scale, offset = layer.input_scale.data, layer.input_offset.data
        # the parts of a fused layer quantize the same input: one scale/offset for all of them
        if not (torch.equal(scale, scale[:1].expand_as(scale))
                and torch.equal(offset, offset[:1].expand_as(offset))):
            raise ValueError(f"{self.prefix}: the fused parts {self.parts} have different "
                             f"input_scale/input_offset ({scale.tolist()}, {offset.tolist()}); "
                             "they quantize the same input, so they must agree")
        if scale[0] <= 0:
            raise ValueError(f"checkpoint tensor {self.prefix}.input_scale: expected > 0, found "
                             f"{float(scale[0])}")
        bias = quant_bias_once(layer, layer.quant_bias.data)
        dtype = layer.ascend_act_dtype
        # npu_quantize(div_mode=False) multiplies: scales = 1 / input_scale, in the input dtype
        layer.ascend_scales = (1.0 / scale[:1]).to(dtype)
        layer.ascend_zero_points = offset[:1].to(dtype)
        layer.quant_bias = torch.nn.Parameter(bias.contiguous(), requires_grad=False)
        layer.deq_scale = torch.nn.Parameter(layer.deq_scale.data.contiguous(), requires_grad=False)
        del layer.input_scale, layer.input_offset

    def apply(self, layer, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])
        xq = ascend_ops.quantize(x2, layer.ascend_scales, layer.ascend_zero_points)
        out = ascend_ops.quant_matmul(xq, layer.weight, layer.deq_scale, None, layer.quant_bias,
                                      x.dtype)
        if bias is not None:
            out = out + bias
        return out.view(*shape[:-1], out.shape[-1])


@register_weight_loader_v2_supported_method
class AscendW8A8DynamicLinearMethod(_AscendInt8Linear):
    """W8A8_DYNAMIC: per-token symmetric activation, per-channel symmetric int8 weight."""

    SPEC = {"weight": ((torch.int8,), _MAT), "weight_scale": ((FLOAT,), _COL),
            "weight_offset": ((FLOAT,), _COL)}

    def create_weights(self, layer, input_size_per_partition, output_partition_sizes, input_size,
                       output_size, params_dtype, **extra_weight_attrs):
        checks, loader = self._checks(layer, input_size, extra_weight_attrs)
        out = sum(output_partition_sizes)
        self._weight(layer, input_size_per_partition, output_partition_sizes, checks, loader)
        for name in ("weight_scale", "weight_offset"):
            layer.register_parameter(name, ChannelQuantScaleParameter(
                data=torch.zeros(out, 1, dtype=torch.float32), output_dim=0,
                weight_loader=checks.wrap(name, loader)))

    def process_weights_after_loading(self, layer) -> None:
        self._finish_weight(layer)
        for name in ("weight_scale", "weight_offset"):
            _check_finite(self.prefix, name, getattr(layer, name).data)
        if bool((layer.weight_offset.data != 0).any()):
            raise ValueError(f"checkpoint tensor {self.prefix}.weight_offset: expected all zeros "
                             "(W8A8_DYNAMIC weights are symmetric); asymmetric int8 weights are "
                             "not supported")
        layer.weight_scale = torch.nn.Parameter(layer.weight_scale.data.reshape(-1).contiguous(),
                                                requires_grad=False)
        del layer.weight_offset

    def apply(self, layer, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        shape = x.shape
        xq, token_scale = ascend_ops.dynamic_quant(x.reshape(-1, shape[-1]))
        out = ascend_ops.quant_matmul(xq, layer.weight, layer.weight_scale, token_scale, None,
                                      x.dtype)
        if bias is not None:
            out = out + bias
        return out.view(*shape[:-1], out.shape[-1])
