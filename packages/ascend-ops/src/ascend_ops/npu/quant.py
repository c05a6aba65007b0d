# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""NPU branch of the int8 ops: torch_npu ``npu_quantize``, ``npu_dynamic_quant`` and
``npu_quant_matmul`` (schemas: torch-npu 2.13.0 ``npu_native_functions_by_codegen.yaml``;
semantics and dtype combinations: its ``_op_plugin_docs.py``)."""

from __future__ import annotations

import torch

from ascend_ops.npu.layers import torch_npu


def quantize(x, scales, zero_points):
    # npu_quantize(Tensor self, Tensor scales, Tensor? zero_points, int dtype, int axis=1,
    # bool div_mode=True): div_mode=False multiplies by scales; axis=-1 broadcasts [H] over rows.
    return torch_npu().npu_quantize(x, scales, zero_points, torch.qint8, -1, False)


def dynamic_quant(x):
    # npu_dynamic_quant(Tensor input, *, ...) -> (y int8, scale float32 [x.shape[:-1]])
    return torch_npu().npu_dynamic_quant(x)


def quant_matmul(x1, x2, scale, pertoken_scale, bias, output_dtype):
    # npu_quant_matmul(Tensor x1, Tensor x2, Tensor scale, *, Tensor? offset=None,
    # Tensor? pertoken_scale=None, Tensor? bias=None, int? output_dtype=None, ...)
    return torch_npu().npu_quant_matmul(x1, x2, scale, pertoken_scale=pertoken_scale, bias=bias,
                                        output_dtype=output_dtype)
