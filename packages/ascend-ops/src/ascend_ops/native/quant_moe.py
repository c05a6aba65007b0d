# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Native CPU branch of ``grouped_quant_matmul``: per expert, the int8 x int8 product with exact
int32 accumulation (``torch._int_mm``, as the dense ``quant_matmul`` in ``native.quant``), then
float32 dequantization by the expert's per-channel and the rows' per-token scales.
Semantics as in ``ascend_ops.reference.quant_moe``.
"""

from __future__ import annotations

import torch

from ascend_ops.native.quant import _int8_gemm


def grouped_quant_matmul(x, weight, scale, pertoken_scale, group_list, output_dtype):
    out = torch.zeros(x.shape[0], weight.shape[2], dtype=output_dtype)
    start = 0
    for e, rows in enumerate(group_list.tolist()):
        if rows:
            acc = _int8_gemm(x[start:start + rows], weight[e])
            deq = acc.float() * scale[e].float() * pertoken_scale[start:start + rows].float()[:, None]
            out[start:start + rows] = deq.to(output_dtype)
        start += rows
    return out
