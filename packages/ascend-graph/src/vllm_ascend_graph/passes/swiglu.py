# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""SiLU(gate) * up -> ``ascend.swiglu`` (``torch_npu.npu_swiglu``).

Matches vLLM's ``SiluAndMul.forward_native`` (``vllm/model_executor/layers/activation.py``)
as Dynamo records it: ``silu(x[..., :d]) * x[..., d:]`` with ``d == x.shape[-1] // 2``,
the halves taken from the same tensor; ``silu`` is ``torch.nn.functional.silu``,
``torch.ops.aten.silu`` or the ``silu`` tensor method. That form is in the graph when
``custom_ops`` disables ``silu_and_mul`` (or the model calls F.silu itself); with the
Ascend models layer's OOT SiluAndMul the graph already holds ``ascend.swiglu``.
"""

from __future__ import annotations

import operator

import torch
import torch.fx as fx
import torch.nn.functional as F

from vllm_ascend_graph.passes._fx import op_packet, value


def _is_silu(node) -> bool:
    if not isinstance(node, fx.Node):
        return False
    if node.op == "call_function" and node.target in (F.silu, torch.ops.aten.silu.default):
        return not node.kwargs.get("inplace", False)
    return node.op == "call_method" and node.target == "silu"


def _half(node, first: bool):
    """``(x, d)`` when ``node`` is ``x[..., :d]`` (first) or ``x[..., d:]`` (second)."""
    if not (isinstance(node, fx.Node) and node.op == "call_function" and node.target is operator.getitem):
        return None
    src, idx = node.args
    if not (isinstance(idx, tuple) and len(idx) == 2 and idx[0] is Ellipsis and isinstance(idx[1], slice)):
        return None
    sl = idx[1]
    if sl.step not in (None, 1):
        return None
    if first and sl.start in (None, 0) and isinstance(sl.stop, int):
        return src, sl.stop
    if not first and isinstance(sl.start, int) and sl.stop is None:
        return src, sl.start
    return None


class FuseSwiGLUPass:
    name = "fuse_swiglu"

    def __call__(self, graph: fx.Graph) -> int:
        fused = op_packet("swiglu")
        if fused is None:
            raise RuntimeError("torch.ops.ascend.swiglu is not registered; import ascend_ops.")
        count = 0
        for node in list(graph.nodes):
            if not (
                (node.op == "call_function" and node.target in (operator.mul, torch.mul))
                or (node.op == "call_method" and node.target == "mul")
            ) or len(node.args) != 2:
                continue
            silu, up = node.args
            if not _is_silu(silu):
                continue
            a, b = _half(silu.args[0], True), _half(up, False)
            if a is None or b is None or a[0] is not b[0] or a[1] != b[1]:
                continue
            x = a[0]
            xv = value(x)
            if not isinstance(xv, torch.Tensor) or xv.shape[-1] != 2 * a[1]:
                continue
            with graph.inserting_before(node):
                new = graph.call_function(fused.default, (x,))
            new.meta.update(node.meta)
            node.replace_all_uses_with(new)
            graph.erase_node(node)
            count += 1
        return count
