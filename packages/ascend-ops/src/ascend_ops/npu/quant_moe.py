# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""NPU branch of ``grouped_quant_matmul``: torch_npu ``npu_grouped_matmul`` in its per-token
quantization scenario (torch-npu 2.13.0: schema in ``npu_native_functions_by_codegen.yaml``,
semantics and dtype table in ``_op_plugin_docs.py``, npu_grouped_matmul):

``npu_grouped_matmul([x], [weight], scale=[scale], per_token_scale=[pertoken_scale],
group_list=counts, split_item=2, group_type=0, group_list_type=1, output_dtype=...)`` computes
``y = (x @ weight_e) * scale_e * pertoken_scale`` per group of rows (formula 3). Its dtype table
(group_list as a tensor, per-token rows) pairs a bfloat16 ``scale`` with bfloat16 output and a
float32 ``scale`` with float16 output, so the float32 per-channel scale is cast for bfloat16.
vllm-ascend's W8A8_DYNAMIC MoE experts call the operator the same way (``npu_dynamic_quant`` of
the routed rows, grouped matmul, SwiGLU, again for the down projection).
"""

from __future__ import annotations

import torch

from ascend_ops.npu.layers import torch_npu


def grouped_quant_matmul(x, weight, scale, pertoken_scale, group_list, output_dtype):
    scale = scale.to(torch.bfloat16) if output_dtype == torch.bfloat16 else scale
    (out,) = torch_npu().npu_grouped_matmul(
        [x], [weight], scale=[scale], per_token_scale=[pertoken_scale],
        group_list=group_list.to(torch.int64), split_item=2, group_type=0, group_list_type=1,
        output_dtype=output_dtype,
    )
    return out
