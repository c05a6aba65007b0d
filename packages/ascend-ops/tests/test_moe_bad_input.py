# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""MoE ops reject bad input with errors naming the argument."""

from __future__ import annotations

import ascend_ops
import pytest
import torch

L = torch.randn(3, 8)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: ascend_ops.moe_gating_top_k(L, 9), ValueError, "top_k=9"),
        (lambda: ascend_ops.moe_gating_top_k(L, 0), ValueError, "top_k=0"),
        (lambda: ascend_ops.moe_gating_top_k(L, 2, scoring="tanh"), ValueError, "scoring"),
        (lambda: ascend_ops.moe_gating_top_k(L, 2, num_expert_group=3), ValueError, "num_expert_group=3"),
        (lambda: ascend_ops.moe_gating_top_k(L, 2, num_expert_group=2, topk_group=3), ValueError, "topk_group=3"),
        (lambda: ascend_ops.moe_gating_top_k(L, 5, num_expert_group=4, topk_group=2), ValueError, "top_k=5"),
        (lambda: ascend_ops.moe_gating_top_k(L, 2, bias=torch.zeros(7)), ValueError, "bias"),
        (lambda: ascend_ops.moe_gating_top_k(L.long(), 2), TypeError, "router_logits"),
        (lambda: ascend_ops.moe_init_routing(L, torch.zeros(2, 2, dtype=torch.int32)), ValueError, "expert_idx"),
        (lambda: ascend_ops.moe_init_routing(L, torch.zeros(3, 2)), TypeError, "expert_idx"),
        (lambda: ascend_ops.moe_finalize_routing(torch.randn(6, 8), torch.rand(3, 2),
                                                 torch.arange(5), torch.zeros(3, 2, dtype=torch.int32)),
         ValueError, "expanded_row_idx"),
        (lambda: ascend_ops.moe_finalize_routing(torch.randn(6, 8), torch.rand(3, 2), torch.arange(6),
                                                 torch.zeros(3, 2, dtype=torch.int32), skip=torch.randn(3, 4)),
         ValueError, "skip"),
        (lambda: ascend_ops.grouped_matmul(torch.randn(4, 8), torch.randn(2, 6, 3), torch.tensor([2, 2])),
         ValueError, "weight"),
        (lambda: ascend_ops.grouped_matmul(torch.randn(4, 8), torch.randn(2, 8, 3), torch.tensor([4])),
         ValueError, "group_list"),
        (lambda: ascend_ops.grouped_matmul(torch.randn(4, 8), torch.randn(2, 8, 3).double(), torch.tensor([2, 2])),
         TypeError, "weight"),
        (lambda: ascend_ops.grouped_matmul_swiglu(torch.randn(4, 8), torch.randn(2, 8, 5), torch.tensor([2, 2])),
         ValueError, "odd N = 5"),
        (lambda: ascend_ops.grouped_matmul_swiglu(torch.randn(4, 8), torch.randn(2, 8, 0), torch.tensor([2, 2])),
         ValueError, "got N = 0"),
        (lambda: ascend_ops.grouped_matmul_swiglu(torch.randn(4, 8), torch.randn(2, 8, 64, device="meta"),
                                                  torch.tensor([2, 2])),
         ValueError, "weight is on meta but x is on cpu"),
        (lambda: ascend_ops.grouped_matmul(torch.randn(4, 8), torch.randn(2, 8, 3),
                                           torch.tensor([2, 2], device="meta")),
         ValueError, "group_list is on meta"),
        (lambda: ascend_ops.grouped_matmul_swiglu(torch.randn(4, 8), torch.randn(2, 6, 4), torch.tensor([2, 2])),
         ValueError, "weight"),
    ],
)
def test_bad_input_names_argument(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.parametrize("backend", ["native", "reference"])
@pytest.mark.parametrize("counts,match", [([-1, 5], ">= 0"), ([3, 3], "at most|more than the 4 rows")])
def test_bad_group_counts_are_refused_on_every_cpu_path(backend, counts, match):
    """K-major contiguous weights take the native backend's per-expert torch loop (no C++ kernel),
    which checks the counts as the kernels do."""
    if backend == "native" and not ascend_ops.native_available():
        pytest.skip("ascend_ops._C not built")
    x, w = torch.randn(4, 8), torch.randn(2, 8, 64)
    with ascend_ops.use_backend(backend):
        for op in (ascend_ops.grouped_matmul, ascend_ops.grouped_matmul_swiglu):
            with pytest.raises(ValueError, match=match):
                op(x, w, torch.tensor(counts))
