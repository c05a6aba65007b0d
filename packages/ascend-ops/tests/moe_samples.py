# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Small MoE problems shared by the MoE tests, the opcheck test and the NPU contract test."""

from __future__ import annotations

import torch


def routing_problem(tokens=5, hidden=8, experts=6, top_k=2, inter=4, seed=0, dtype=torch.float32):
    """Random tokens, distinct top-k expert ids per token, weights, and per-expert SwiGLU weights."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, hidden, generator=g).to(dtype)
    ids = [torch.randperm(experts, generator=g)[:top_k] for _ in range(tokens)]
    ids = torch.stack(ids).to(torch.int32) if ids else torch.zeros(0, top_k, dtype=torch.int32)
    scales = torch.rand(tokens, top_k, generator=g)
    w13 = (torch.randn(experts, hidden, 2 * inter, generator=g) / hidden**0.5).to(dtype)
    w2 = (torch.randn(experts, inter, hidden, generator=g) / inter**0.5).to(dtype)
    return dict(x=x, ids=ids, scales=scales, w13=w13, w2=w2, experts=experts)


def opcheck_samples() -> dict:
    """{op name: positional args of torch.ops.ascend.<op>} for torch.library.opcheck."""
    p = routing_problem()
    logits = torch.randn(5, 8)
    rows = torch.randn(10, 8)
    row_idx = torch.randperm(10).to(torch.int32)
    return {
        "moe_gating_top_k": (logits, 3, "sigmoid", True, 4, 2, 2.5, torch.randn(8)),
        "moe_init_routing": (p["x"], p["ids"]),
        "moe_finalize_routing": (rows, p["scales"], row_idx, p["ids"], torch.randn(5, 8), torch.randn(6, 8)),
        "grouped_matmul": (torch.randn(7, 8), torch.randn(3, 8, 5), torch.tensor([2, 0, 4])),
        "grouped_matmul_swiglu": (torch.randn(7, 8), torch.randn(3, 8, 6), torch.tensor([2, 0, 4]), -1),
    }


def run_moe_ops(dtype=torch.float32) -> dict:
    """Run every MoE op on the current backend and the reference: {case: (got, expected)}."""
    import ascend_ops
    from ascend_ops.reference import moe as ref

    r = {}
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(6, 16, generator=g).to(dtype)
    bias = torch.randn(16, generator=g) * 0.1
    gating = {
        "softmax": dict(scoring="softmax"),
        "softmax_renorm_grouped": dict(scoring="softmax", renormalize=True, num_expert_group=4, topk_group=2),
        "sigmoid_bias_grouped": dict(scoring="sigmoid", renormalize=True, num_expert_group=4, topk_group=2,
                                     routed_scaling_factor=2.5, bias=bias),
        "sigmoid_plain": dict(scoring="sigmoid"),
    }
    for name, kw in gating.items():
        r[f"moe_gating_top_k({name})"] = (ascend_ops.moe_gating_top_k(logits, 3, **kw),
                                           ref.moe_gating_top_k(logits, 3, **kw))
    p = routing_problem(tokens=6, experts=5, top_k=2, dtype=dtype)
    got = ascend_ops.moe_init_routing(p["x"], p["ids"])
    r["moe_init_routing"] = (got, ref.moe_init_routing(p["x"], p["ids"]))
    counts = torch.bincount(got[2].long(), minlength=5)
    r["grouped_matmul"] = (ascend_ops.grouped_matmul(got[0], p["w13"], counts),
                           ref.grouped_matmul(got[0], p["w13"], counts))
    r["grouped_matmul_swiglu"] = (ascend_ops.grouped_matmul_swiglu(got[0], p["w13"], counts),
                                  ref.grouped_matmul_swiglu(got[0], p["w13"], counts))
    y = got[0]
    scales = p["scales"].to(dtype)
    skip = torch.randn(6, 8, generator=g).to(dtype)
    ebias = torch.randn(5, 8, generator=g).to(dtype)
    r["moe_finalize_routing"] = (
        ascend_ops.moe_finalize_routing(y, scales, got[1], p["ids"], skip=skip, bias=ebias),
        ref.moe_finalize_routing(y, scales, got[1], p["ids"], skip=skip, bias=ebias),
    )
    return r
