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

import ascend_ops
import torch
from vllm.model_executor.layers.linear import (
    LinearMethodBase,
    RowParallelLinear,
    register_weight_loader_v2_supported_method,
)
from vllm.model_executor.parameter import (
    ChannelQuantScaleParameter,
    ModelWeightParameter,
    PerTensorScaleParameter,
)


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


def _check_loaded(prefix: str, name: str, t: torch.Tensor, dtype: torch.dtype) -> None:
    if t.dtype != dtype:
        raise ValueError(f"{prefix}.{name}: expected {dtype}, checkpoint gave {t.dtype}")
    if t.is_floating_point() and not torch.isfinite(t).all():
        raise ValueError(f"{prefix}.{name}: not loaded or not finite (missing from the checkpoint?)")


class _AscendInt8Linear(LinearMethodBase):
    """Shared int8 weight handling of both schemes."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def _weight(self, layer, in_size, out_sizes, loader):
        # filled with NaN-free sentinel values so a missing tensor is detectable after loading
        w = ModelWeightParameter(data=torch.empty(sum(out_sizes), in_size, dtype=torch.int8),
                                 input_dim=1, output_dim=0, weight_loader=loader)
        layer.register_parameter("weight", w)

    @staticmethod
    def _nan(*shape) -> torch.Tensor:
        return torch.full(shape, float("nan"), dtype=torch.float32)

    def _finish_weight(self, layer) -> None:
        w = layer.weight.data
        _check_loaded(self.prefix, "weight", w, torch.int8)
        layer.weight = torch.nn.Parameter(w.t(), requires_grad=False)  # [in, out] for x2


@register_weight_loader_v2_supported_method
class AscendW8A8LinearMethod(_AscendInt8Linear):
    """Static W8A8: per-tensor asymmetric activation, per-channel symmetric int8 weight."""

    def create_weights(self, layer, input_size_per_partition, output_partition_sizes, input_size,
                       output_size, params_dtype, **extra_weight_attrs):
        loader = extra_weight_attrs["weight_loader"]
        out = sum(output_partition_sizes)
        self._weight(layer, input_size_per_partition, output_partition_sizes, loader)
        n_parts = len(output_partition_sizes)
        layer.register_parameter("input_scale", PerTensorScaleParameter(
            data=self._nan(n_parts), weight_loader=loader))
        layer.register_parameter("input_offset", PerTensorScaleParameter(
            data=self._nan(n_parts), weight_loader=loader))
        layer.register_parameter("deq_scale", DeqScaleParameter(
            data=self._nan(out), output_dim=0, weight_loader=loader))
        layer.register_parameter("quant_bias", ChannelQuantScaleParameter(
            data=torch.full((out,), -(2**31), dtype=torch.int32), output_dim=0,
            weight_loader=loader))
        layer.ascend_act_dtype = params_dtype

    def process_weights_after_loading(self, layer) -> None:
        self._finish_weight(layer)
        for name in ("input_scale", "input_offset", "deq_scale"):
            _check_loaded(self.prefix, name, getattr(layer, name).data, torch.float32)
        scale, offset = layer.input_scale.data, layer.input_offset.data
        # the parts of a fused layer quantize the same input: one scale/offset for all of them
        if not (torch.equal(scale, scale[:1].expand_as(scale))
                and torch.equal(offset, offset[:1].expand_as(offset))):
            raise ValueError(f"{self.prefix}: the fused parts have different input_scale/"
                             f"input_offset ({scale.tolist()}, {offset.tolist()}); they must agree")
        if scale[0] <= 0:
            raise ValueError(f"{self.prefix}.input_scale must be > 0, got {float(scale[0])}")
        bias = layer.quant_bias.data
        if bool((bias == -(2**31)).all()):
            raise ValueError(f"{self.prefix}.quant_bias: missing from the checkpoint")
        if isinstance(layer, RowParallelLinear) and layer.tp_rank > 0:
            bias = torch.zeros_like(bias)  # the partial sums are all-reduced: add it once
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

    def create_weights(self, layer, input_size_per_partition, output_partition_sizes, input_size,
                       output_size, params_dtype, **extra_weight_attrs):
        loader = extra_weight_attrs["weight_loader"]
        out = sum(output_partition_sizes)
        self._weight(layer, input_size_per_partition, output_partition_sizes, loader)
        layer.register_parameter("weight_scale", ChannelQuantScaleParameter(
            data=self._nan(out, 1), output_dim=0, weight_loader=loader))
        layer.register_parameter("weight_offset", ChannelQuantScaleParameter(
            data=self._nan(out, 1), output_dim=0, weight_loader=loader))

    def process_weights_after_loading(self, layer) -> None:
        self._finish_weight(layer)
        for name in ("weight_scale", "weight_offset"):
            _check_loaded(self.prefix, name, getattr(layer, name).data, torch.float32)
        if bool((layer.weight_offset.data != 0).any()):
            raise ValueError(f"{self.prefix}.weight_offset: asymmetric int8 weights are not "
                             "supported (W8A8_DYNAMIC weights are symmetric: offset 0)")
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
