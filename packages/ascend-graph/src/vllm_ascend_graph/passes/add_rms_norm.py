# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Residual add + RMSNorm -> ``ascend.add_rms_norm`` (``torch_npu.npu_add_rms_norm``).

Matches, on the Dynamo-level graph vLLM 0.32 hands the compile backend:

1. ``torch.ops.vllm_ir.fused_add_rms_norm(x, residual, weight, eps)`` -- vLLM's IR op as it
   stays in the graph when its implementation is chosen at run time
   (``vllm/ir/ops/layernorm.py``; no ``variance_size``, weight present);
2. ``s = x + residual`` followed by ``rms_norm(s, weight, eps)`` where ``rms_norm`` is
   ``ascend.rms_norm`` or ``vllm_ir.rms_norm`` (no ``variance_size``, weight present), and
   ``x``/``residual`` have the same shape and dtype (no broadcasting). Other users of
   ``s`` read the op's second output (the new residual).

With the Ascend models layer's IR kernels and CustomOps, vLLM already emits
``ascend.add_rms_norm`` for Llama-style decoder layers, so on those graphs this pass
finds nothing to do; it catches models and configurations that reach the unfused
form (e.g. the IR priority pointing at vLLM's native kernels, or model code that adds
the residual itself before a plain RMSNorm).
"""

from __future__ import annotations

import operator

import torch.fx as fx

from vllm_ascend_graph.passes._fx import is_add, is_op, op_packet, same_shape_dtype


class FuseAddRMSNormPass:
    name = "fuse_add_rms_norm"

    def __call__(self, graph: fx.Graph) -> int:
        fused = op_packet("add_rms_norm")
        if fused is None:
            raise RuntimeError("torch.ops.ascend.add_rms_norm is not registered; import ascend_ops.")
        ir_fused = op_packet("fused_add_rms_norm", "vllm_ir")
        norms = (op_packet("rms_norm"), op_packet("rms_norm", "vllm_ir"))
        count = 0
        for node in list(graph.nodes):
            if is_op(node, ir_fused) and _plain(node.args, 4):
                x, residual, weight, eps = node.args[:4]
                with graph.inserting_before(node):
                    new = graph.call_function(fused.default, (x, residual, weight, eps))
                new.meta.update(node.meta)
                node.replace_all_uses_with(new)
                graph.erase_node(node)
                count += 1
            elif is_op(node, *norms) and _plain(node.args, 3):
                add = node.args[0]
                if not is_add(add) or not same_shape_dtype(add.args[0], add.args[1]):
                    continue
                x, residual = add.args
                weight, eps = node.args[1], node.args[2]
                with graph.inserting_before(node):
                    new = graph.call_function(fused.default, (x, residual, weight, eps))
                    out = graph.call_function(operator.getitem, (new, 0))
                    new_res = graph.call_function(operator.getitem, (new, 1))
                out.meta.update(node.meta)
                new_res.meta.update(add.meta)
                node.replace_all_uses_with(out)
                graph.erase_node(node)
                add.replace_all_uses_with(new_res)
                graph.erase_node(add)
                count += 1
        return count


def _plain(args: tuple, n: int) -> bool:
    """Exactly ``n`` leading args, optional trailing ``variance_size`` None, weight not None."""
    if len(args) < n or (len(args) > n and args[n] is not None):
        return False
    return args[n - 2] is not None
