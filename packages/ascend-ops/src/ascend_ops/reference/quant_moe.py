# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Reference grouped int8 matmul of MoE experts with per-token dequantization: the semantics of
torch_npu ``npu_grouped_matmul`` in its per-token quantization scenario (torch-npu 2.13.0
``_op_plugin_docs.py``, npu_grouped_matmul formula 3 with group_type=0, group_list_type=1).

Written for readability: one expert at a time, integer products summed exactly in float64
(every int8 x int8 sum of up to 2**37 terms is exact there).
"""

from __future__ import annotations

import torch


def grouped_quant_matmul(x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor,
                         pertoken_scale: torch.Tensor, group_list: torch.Tensor,
                         output_dtype: torch.dtype) -> torch.Tensor:
    """Rows ``start:start + group_list[e]`` of ``x`` use expert ``e``:
    ``out[r] = (x[r] @ weight[e]) * scale[e] * pertoken_scale[r]``.

    ``x`` int8 [M, K], ``weight`` int8 [E, K, N], ``scale`` float [E, N], ``pertoken_scale``
    float [M], ``group_list`` [E] row counts. Rows past ``sum(group_list)`` are zero.
    """
    out = torch.zeros(x.shape[0], weight.shape[2], dtype=torch.float64)
    start = 0
    for e, rows in enumerate(group_list.tolist()):
        if rows:
            acc = x[start:start + rows].double() @ weight[e].double()
            out[start:start + rows] = (acc * scale[e].double()
                                       * pertoken_scale[start:start + rows].double().unsqueeze(-1))
        start += rows
    return out.to(output_dtype)
