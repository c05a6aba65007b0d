# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Documented constraints of the simulated operators (rules and sources per module)."""

from ascend_ops.simulator.constraints.core import RULES, check, check_graph_workspace

__all__ = ["RULES", "check", "check_graph_workspace"]
