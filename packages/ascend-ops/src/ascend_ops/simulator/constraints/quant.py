# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Documented constraints of the simulated int8 operators (rules as in ``constraints``).

Source: [PLUGIN] ``torch_npu/_op_plugin_docs.py`` in the torch-npu 2.13.0 wheel, sections
npu_quantize, npu_dynamic_quant and npu_quant_matmul (Atlas A2/A3 rows of each table).
"""

from __future__ import annotations

import torch

from ascend_ops.simulator.constraints.base import HALF, _dtype, _need
from ascend_ops.simulator.constraints.core import grouped_matmul as float_rules
from ascend_ops.simulator.kernels_quant import as_dtype

FLOATS = (torch.float16, torch.bfloat16, torch.float32)  # HALF + float32


def quantize(a: dict, op="npu_quantize") -> None:
    x, scales, zp = a["self"], a["scales"], a["zero_points"]
    # [PLUGIN] npu_quantize 参数说明: input float/float16/bfloat16.
    _dtype(x, FLOATS, op, "self")
    # [PLUGIN] dtype: div_mode=False supports torch.qint8 / torch.quint4x2 (only qint8 modelled).
    _need(as_dtype(a["dtype"]) == torch.qint8, op, "dtype must be torch.qint8 (int8 output)")
    _need(not a["div_mode"] or zp is None or zp.dtype in (torch.int8, torch.uint8, torch.int32,
                                                          torch.bfloat16), op,
          "with div_mode=True zero_points must be int8/uint8/int32/bfloat16")
    if not a["div_mode"]:
        # [PLUGIN] div_mode=False: scales float/float16/bfloat16, 1-D of size input.shape[axis]
        # or 1; zero_points with the shape and dtype of scales; axis in [-2, ndim).
        _dtype(scales, FLOATS, op, "scales")
        axis = a["axis"]
        _need(-2 <= axis < x.dim(), op, "axis must be in [-2, input.dim())")
        size = x.shape[-2] if axis == -2 else x.shape[-1]
        _need(scales.dim() == 1 and scales.shape[0] in (1, size), op,
              f"scales must be 1-D of size {size} (input's axis dim) or 1")
        if zp is not None:
            _need(zp.shape == scales.shape and zp.dtype == scales.dtype, op,
                  "zero_points must have the shape and dtype of scales")


def dynamic_quant(a: dict, op="npu_dynamic_quant") -> None:
    x = a["input"]
    # [PLUGIN] npu_dynamic_quant 参数说明: x float16/bfloat16, dim > 1.
    _dtype(x, HALF, op, "input")
    _need(x.dim() > 1, op, "input must have more than one dim")
    # [PLUGIN] dst_type: None (int8) or torch.int8 / torch.quint4x2 (only int8 modelled).
    _need(as_dtype(a["dst_type"]) in (None, torch.int8), op, "dst_type must be None or torch.int8")
    _need(a["quant_mode"] == "pertoken", op, "quant_mode must be 'pertoken'")


def quant_matmul(a: dict, op="npu_quant_matmul") -> None:
    x1, x2, scale, pts, bias = a["x1"], a["x2"], a["scale"], a["pertoken_scale"], a["bias"]
    # [PLUGIN] npu_quant_matmul: x1 int8 (int32 = packed int4, not modelled), x2 of x1's dtype,
    # 2-6 dims; the simulator models 2-D x1 [m, k] @ x2 [k, n].
    _dtype(x1, (torch.int8,), op, "x1")
    _dtype(x2, (torch.int8,), op, "x2")
    _need(x1.dim() == 2 and x2.dim() == 2, op, "x1 and x2 must be 2-D (batched forms not modelled)")
    m, k = x1.shape
    _need(x2.shape[0] == k, op, f"x2 must be [k={k}, n]")
    n = x2.shape[1]
    # [PLUGIN] 约束说明: the last dims of x1 and x2 must not exceed 65535.
    _need(k <= 65535 and n <= 65535, op, "the last dims of x1 and x2 must not exceed 65535")
    # [PLUGIN] scale: 1-D (t,), t = 1 or n; float32/int64/bfloat16.
    _dtype(scale, (torch.float32, torch.int64, torch.bfloat16), op, "scale")
    _need(scale.dim() == 1 and scale.shape[0] in (1, n), op, f"scale must be 1-D of size 1 or n={n}")
    # [PLUGIN] pertoken_scale: float32, 1-D (m,).
    if pts is not None:
        _dtype(pts, (torch.float32,), op, "pertoken_scale")
        _need(pts.dim() == 1 and pts.shape[0] == m, op, f"pertoken_scale must be 1-D of size m={m}")
    # [PLUGIN] bias: (n,), (1, n) for a 2-D output.
    if bias is not None:
        _need(bias.dim() in (1, 2) and bias.shape[-1] == n and bias.numel() == n, op,
              f"bias must be (n,) or (1, n) with n={n}")
    out = as_dtype(a["output_dtype"]) or torch.int8
    # [PLUGIN] 表1 (A2/A3): the supported x1/x2/scale/offset/bias/pertoken_scale/output_dtype rows.
    bias_dt = None if bias is None else bias.dtype
    if out == torch.float16 and pts is None:
        ok = scale.dtype in (torch.int64, torch.float32) and bias_dt in (None, torch.int32)
    elif out == torch.float16:
        ok = scale.dtype == torch.float32 and bias_dt in (None, torch.int32, torch.float16,
                                                          torch.float32)
    elif out == torch.bfloat16:
        ok = scale.dtype in (torch.float32, torch.bfloat16) and bias_dt in (
            None, torch.int32, torch.bfloat16, torch.float32)
    elif out == torch.int8:
        ok = pts is None and scale.dtype in (torch.int64, torch.float32) and bias_dt in (
            None, torch.int32)
    elif out == torch.int32:
        ok = pts is None and scale.dtype in (torch.float32, torch.bfloat16) and bias_dt in (
            None, torch.int32)
    else:
        ok = False
    _need(ok, op, f"unsupported combination (output_dtype={out}, scale {scale.dtype}, bias "
                  f"{bias_dt}, pertoken_scale {'set' if pts is not None else 'None'}); see the "
                  "operator's dtype table")


def grouped_matmul(a: dict, op="npu_grouped_matmul") -> None:
    """int8 x: the per-token quantization scenario; float x: the float rules of ``constraints.core``."""
    xs, ws = a["x"], a["weight"]
    if not any(x.dtype == torch.int8 for x in xs):
        float_rules(a, op)
        return
    # [PLUGIN] npu_grouped_matmul 参数说明 per_token_scale: only with group_list as a tensor;
    # group_type 0 with split_item 2/3 (单单单: one x [m, k], one 3-D weight [g, k, n]).
    gl, scales, pts = a["group_list"], a["scale"], a["per_token_scale"]
    _need(isinstance(gl, torch.Tensor) and gl.dtype == torch.int64, op,
          "group_list must be an int64 tensor in the quantized scenarios")
    _need(len(xs) == 1 and len(ws) == 1 and ws[0].dim() == 3 and xs[0].dim() == 2, op,
          "the modelled quantized form is one 2-D x and one 3-D weight [g, k, n]")
    x, w = xs[0], ws[0]
    _need(a["group_type"] == 0 and a["split_item"] in (2, 3), op,
          "group_type=0 needs split_item 2 or 3")
    _dtype(w, (torch.int8,), op, "weight")
    g, k, n = w.shape
    _need(x.shape[1] == k, op, f"x must be [m, k={k}]")
    # [PLUGIN] 约束说明: the inner dims (k of x, n of weight) must be below 65536.
    _need(k < 65536 and n < 65536, op, "the last dims of x and weight must be below 65536")
    _need(gl.dim() == 1 and gl.shape[0] == g, op, f"group_list must be 1-D with one entry per group ({g})")
    # [PLUGIN] group_list_type 1: the counts sum to x's first dim (group_list_type 0: cumsum).
    total = int(gl.sum()) if a["group_list_type"] == 1 else int(gl[-1])
    _need(total == x.shape[0], op, f"group_list must cover x's {x.shape[0]} rows, covers {total}")
    out = as_dtype(a["output_dtype"])
    if scales is None and pts is None and out == torch.int32:
        # int8 x int8 -> int32 without scale: the raw accumulator, no dequantization. op-plugin
        # GroupedMatmulKernelNpuOpApi.cpp@517f2e7:191-194,283,303-306 allocates y in output_dtype
        # and passes an empty scale list (no check requires one); torch_npu-npu_grouped_matmul.md
        # @517f2e7:192-201 lists x int8 / weight int8 / output_dtype int32 / y int32. vllm-ascend's
        # W8A8 MC2 gate_up call (vllm_ascend/ops/moe/moe_mlp.py@2f1aed9:104-114) then dequantizes
        # with npu_dequant_swiglu_quant.
        _need(a["offset"] is None and a["bias"] is None, op,
              "offset/bias are not modelled in the int32-output (no scale) scenario")
        return
    _need(scales is not None and len(scales) == 1, op,
          "the quantized scenarios need one scale (or none with output_dtype=torch.int32)")
    scale = scales[0]
    # one scale row per group for the 3-D weight (vllm-ascend's W8A8_DYNAMIC MoE passes [g, n])
    _need(tuple(scale.shape) == (g, n), op, f"scale must be [g={g}, n={n}]")
    _need(a["offset"] is None and a["bias"] is None, op,
          "offset must be None (documented); bias is not modelled in the quantized scenarios")
    if pts is None:
        # [PLUGIN] 表1 per-channel row: scale int64/bfloat16/float32 -> int8/bfloat16/float16
        ok = (out, scale.dtype) in ((None, torch.int64), (torch.int8, torch.int64),
                                    (torch.bfloat16, torch.bfloat16), (torch.float16, torch.float32))
    else:
        # [PLUGIN] 表1 per-token row: per_token_scale float32 1-D [m]; scale bfloat16 with
        # bfloat16 output, float32 with float16 output.
        _need(len(pts) == 1 and pts[0].dtype == torch.float32 and tuple(pts[0].shape) == (x.shape[0],),
              op, f"per_token_scale must be one float32 [m={x.shape[0]}] tensor")
        ok = (out, scale.dtype) in ((torch.bfloat16, torch.bfloat16), (torch.float16, torch.float32))
    _need(ok, op, f"unsupported quantized combination (output_dtype={out}, scale {scale.dtype}, "
                  f"per_token_scale {'set' if pts is not None else 'None'}); see the dtype table")


QUANT_RULES = {
    "npu_grouped_matmul": grouped_matmul,
    "npu_quantize": quantize,
    "npu_dynamic_quant": dynamic_quant,
    "npu_quant_matmul": quant_matmul,
}
