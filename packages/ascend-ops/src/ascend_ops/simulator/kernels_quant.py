# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Reference kernels of the simulated torch_npu int8 operators, written from the operator docs
(torch-npu 2.13.0 ``_op_plugin_docs.py``: npu_quantize, npu_dynamic_quant, npu_quant_matmul),
independently of ``ascend_ops.reference.quant``. The documented argument rules are checked in
``constraints.quant`` before these run; modes outside them raise ``NotImplementedError``.
"""

from __future__ import annotations

import torch

# c10::ScalarType codes: the schemas type dtype arguments as ``int``
_SCALAR_TYPES = {1: torch.int8, 3: torch.int32, 5: torch.float16, 6: torch.float32,
                 12: torch.qint8, 15: torch.bfloat16}


def as_dtype(code) -> torch.dtype | None:
    """A schema ``int`` dtype argument (ScalarType code or torch.dtype) as a torch.dtype."""
    if code is None or isinstance(code, torch.dtype):
        return code
    if int(code) not in _SCALAR_TYPES:
        raise NotImplementedError(f"dtype code {code} is not modelled")
    return _SCALAR_TYPES[int(code)]


def _to_int8(v: torch.Tensor) -> torch.Tensor:
    return torch.clamp(torch.round(v), -128, 127).to(torch.int8)


def npu_quantize(self, scales, zero_points, dtype, axis, div_mode):
    """result = input * scales + zero_points (div_mode False) or input / scales + zero_points."""
    v = self.float() / scales.float() if div_mode else self.float() * scales.float()
    if zero_points is not None:
        v = v + zero_points.float()
    return _to_int8(v)


def npu_dynamic_quant(input, smooth_scales, group_index, dst_type, quant_mode, dst_type_max):
    """scale = rowMax(abs(x)) / 127, y = round(x / scale) (the doc's formula, no smooth scales)."""
    if smooth_scales is not None or group_index is not None:
        raise NotImplementedError("smooth_scales / group_index (MoE smoothing) are not modelled")
    x = input.float()
    scale = x.abs().max(dim=-1).values / 127.0
    y = torch.zeros(x.shape, dtype=torch.int8)
    nonzero = scale > 0
    y[nonzero] = _to_int8(x[nonzero] / scale[nonzero].unsqueeze(-1))
    return y, scale


def _scale_values(scale: torch.Tensor) -> torch.Tensor:
    if scale.dtype == torch.int64:
        # npu_trans_quant_param layout: the float32 bit pattern in the low 32 bits
        return (scale & 0xFFFFFFFF).to(torch.int32).view(torch.float32)
    return scale.float()


def npu_quant_matmul(x1, x2, scale, offset, pertoken_scale, bias, output_dtype, x1_dtype,
                     x2_dtype, pertoken_scale_dtype, scale_dtype, group_sizes, y_scale):
    """out = (x1 @ x2 [+ int32 bias]) * scale [* pertoken_scale] [+ float bias]."""
    if any(v is not None for v in (offset, x1_dtype, x2_dtype, pertoken_scale_dtype, scale_dtype,
                                   group_sizes, y_scale)):
        raise NotImplementedError("offset, explicit x/scale dtypes, group_sizes and y_scale are not "
                                  "modelled")
    out_dtype = as_dtype(output_dtype) or torch.int8
    if out_dtype in (torch.int8, torch.int32):
        raise NotImplementedError("int8 / int32 outputs are not modelled")
    # exact integer accumulation: |products| <= 2**14, so float64 sums of k <= 65535 terms are exact
    acc = x1.double() @ x2.double()
    if bias is not None and bias.dtype == torch.int32:
        acc = acc + bias.double()
    out = acc * _scale_values(scale).double()
    if pertoken_scale is not None:
        out = out * pertoken_scale.double().unsqueeze(-1)
    if bias is not None and bias.dtype != torch.int32:
        out = out + bias.double()
    return out.to(out_dtype)


def npu_grouped_matmul(x, weight, **kw):
    """Per-token quantized groups (formula 3): ``y = (x @ weight_e) * scale_e * per_token_scale``;
    without scale and with ``output_dtype=torch.int32``: ``y = x @ weight_e``, the int32
    accumulator (op-plugin GroupedMatmulKernelNpuOpApi.cpp@517f2e7:191-194,303-306,
    torch_npu-npu_grouped_matmul.md@517f2e7:192-201; see ``constraints.quant.grouped_matmul``).
    x int8 [m, k], weight int8 [g, k, n], group_list int64 [g] -> [y [m, n]]. Float inputs go to
    the float kernel (``kernels_moe``)."""
    from ascend_ops.simulator.kernels_moe import npu_grouped_matmul as float_kernel

    if x[0].dtype != torch.int8:
        return float_kernel(x, weight, **kw)
    out_dtype = as_dtype(kw["output_dtype"])
    raw = kw["scale"] is None and kw["per_token_scale"] is None and out_dtype == torch.int32
    if kw["per_token_scale"] is None and not raw:
        raise NotImplementedError("simulated quantized grouped matmul models the per-token and the "
                                  "int32-output (no scale) scenarios")
    xs, w = x[0], weight[0]
    counts = kw["group_list"].tolist()
    if kw["group_list_type"] == 0:
        counts = [b - a for a, b in zip([0, *counts[:-1]], counts, strict=True)]
    out = torch.zeros(xs.shape[0], w.shape[2], dtype=torch.float64)
    start = 0
    for e, rows in enumerate(counts):
        acc = xs[start:start + rows].double() @ w[e].double()  # exact: |products| <= 2**14, k < 65536
        if not raw:
            acc = acc * kw["scale"][0][e].double() * kw["per_token_scale"][0][start:start + rows].double()[:, None]
        out[start:start + rows] = acc
        start += rows
    return [out.to(out_dtype)]


QUANT_KERNELS = {
    "npu_grouped_matmul": npu_grouped_matmul,
    "npu_quantize": npu_quantize,
    "npu_dynamic_quant": npu_dynamic_quant,
    "npu_quant_matmul": npu_quant_matmul,
}
