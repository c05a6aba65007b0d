# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Small helpers for matching Dynamo-level FX graphs (``call_function``/``call_method``)."""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx as fx


def op_packet(name: str, namespace: str = "ascend") -> Any:
    """``torch.ops.<namespace>.<name>`` or None when not registered."""
    ns = getattr(torch.ops, namespace, None)
    try:
        return getattr(ns, name) if ns is not None else None
    except (AttributeError, RuntimeError):
        return None


def is_op(node: Any, *packets: Any) -> bool:
    """True for a call_function node whose target is one of ``packets`` or an overload of one."""
    if not isinstance(node, fx.Node) or node.op != "call_function":
        return False
    target = node.target
    for packet in packets:
        if packet is None:
            continue
        if target is packet or getattr(target, "overloadpacket", None) is packet:
            return True
    return False


def is_add(node: Any) -> bool:
    """``a + b`` / ``torch.add(a, b)`` / ``a.add(b)`` with exactly two tensor operands, alpha 1."""
    if not isinstance(node, fx.Node) or node.kwargs.get("alpha", 1) != 1:
        return False
    if node.op == "call_function" and node.target in (operator.add, torch.add):
        return len(node.args) == 2
    if node.op == "call_method" and node.target == "add":
        return len(node.args) == 2
    return is_op(node, torch.ops.aten.add) and len(node.args) == 2 and node.target == torch.ops.aten.add.Tensor


def value(node: Any) -> Any:
    """The example/fake value recorded on a node (Dynamo: ``example_value``; AOT: ``val``)."""
    if not isinstance(node, fx.Node):
        return node
    return node.meta.get("example_value", node.meta.get("val"))


def same_shape_dtype(a: Any, b: Any) -> bool:
    va, vb = value(a), value(b)
    return (
        isinstance(va, torch.Tensor)
        and isinstance(vb, torch.Tensor)
        and va.dtype == vb.dtype
        and tuple(va.shape) == tuple(vb.shape)
    )


_INPLACE_BUILTINS = {operator.setitem, operator.delitem, operator.iadd, operator.isub,
                     operator.imul, operator.itruediv, operator.ifloordiv, operator.imod,
                     operator.ipow, operator.iand, operator.ior, operator.ixor}


def may_mutate(node: fx.Node) -> bool:
    """Keep-alive test for dead-code elimination on Dynamo-level graphs.

    ``fx.Node.is_impure`` treats every ``call_method`` as pure, so an in-place method whose
    result is unused (``out.masked_fill_(mask, 0)`` in vLLM's ``VocabParallelEmbedding``
    under TP > 1) would be deleted and its write lost. True for anything FX calls impure, for
    in-place methods and functions (trailing ``_``, e.g. ``add_``, ``copy_``, ``torch.relu_``),
    for in-place operator builtins and ``setitem``, and for ops whose schema mutates an argument.
    """
    if node.is_impure():
        return True
    target = node.target
    if node.op == "call_method":
        return isinstance(target, str) and target.endswith("_") and not target.endswith("__")
    if node.op != "call_function":
        return False
    if target in _INPLACE_BUILTINS:
        return True
    schema = getattr(target, "_schema", None)
    if schema is not None and schema.is_mutable:
        return True
    overloads = getattr(target, "overloads", None)
    if callable(overloads):  # an OpOverloadPacket: mutable if any overload is
        for name in overloads():
            if getattr(getattr(target, name), "_schema", None) is not None and \
                    getattr(target, name)._schema.is_mutable:
                return True
    name = getattr(target, "__name__", "")
    return name.endswith("_") and not name.endswith("__")
