# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Documented constraints of each simulated operator; a violation raises
``SimulatedNpuError("<operator>: <rule>")`` before the kernel runs.

One module per operator family, each citing its sources: ``core`` (norm, SwiGLU, KV-cache write,
FIA and its MLA path, MoE v1 routing, grouped matmul, BGMV), ``quant`` (the int8 operators),
``moe`` (the v2 routing operators), ``rope`` (rotary embedding), ``sparse`` (the DeepSeek-V3.2
lightning indexer and sparse flash attention); ``base`` holds the helpers they
share. This package assembles their rule tables into ``RULES``.
"""

from __future__ import annotations

from ascend_ops.simulator.constraints.core import RULES as _CORE_RULES
from ascend_ops.simulator.constraints.core import check_graph_workspace
from ascend_ops.simulator.constraints.moe import MOE_RULES
from ascend_ops.simulator.constraints.quant import QUANT_RULES
from ascend_ops.simulator.constraints.rope import ROPE_RULES
from ascend_ops.simulator.constraints.sparse import SPARSE_RULES

#: operator name -> its rule; a later table's entry replaces an earlier one of the same name
#: (the int8 ``npu_grouped_matmul`` rule extends the float one, which it calls)
RULES = {**_CORE_RULES, **QUANT_RULES, **MOE_RULES, **ROPE_RULES, **SPARSE_RULES}


def check(op: str, args: dict) -> None:
    """Apply ``op``'s documented rules to its bound arguments (no-op for an op without rules)."""
    rule = RULES.get(op)
    if rule is not None:
        rule(args)


__all__ = ["RULES", "check", "check_graph_workspace"]
