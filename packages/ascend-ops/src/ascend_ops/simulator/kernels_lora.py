# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Reference kernel of the simulated ``npu_batch_gather_matmul`` / ``npu_batch_gather_matmul_``
(op-plugin, GE op ``AddLora``): the semantics ``torch_npu/_op_plugin_docs.py`` publishes, per
row in float32, written independently of ``ascend_ops.reference.lora``.

For each row t with ``i = indices[t] >= 0``::

    v = x[t] @ weight_a[i, layer_idx]^T      (skipped when weight_a is None: v = x[t])
    self[t, y_offset : y_offset + size] += scale * (v @ weight_b[i, layer_idx]^T)

with ``size = y_slice_size`` (``-1``: the width of ``self``). A negative index leaves the row
unchanged (the operator's documented example draws indices from [-1, W)). The documented
dtype/shape limits are checked in ``constraints`` before this runs.
"""

from __future__ import annotations


def _add_lora(y, x, weight_b, indices, weight_a, layer_idx, scale, y_offset, y_slice_size):
    size = y.shape[1] if y_slice_size == -1 else y_slice_size
    for t in range(x.shape[0]):
        i = int(indices[t])
        if i < 0:
            continue
        v = x[t].float()
        if weight_a is not None:
            v = weight_a[i, layer_idx].float() @ v
        add = scale * (weight_b[i, layer_idx, :size].float() @ v)
        y[t, y_offset:y_offset + size] = (y[t, y_offset:y_offset + size].float() + add).to(y.dtype)
    return y


def npu_batch_gather_matmul(self, x, weight_b, indices, weight_a, layer_idx, scale, y_offset,
                            y_slice_size):
    """Out-of-place form: a new tensor equal to ``self`` plus the LoRA product."""
    return _add_lora(self.clone(), x, weight_b, indices, weight_a, layer_idx, scale, y_offset,
                     y_slice_size)


def npu_batch_gather_matmul_(self, x, weight_b, indices, weight_a, layer_idx, scale, y_offset,
                             y_slice_size):
    """In-place form: adds into ``self`` and returns it."""
    return _add_lora(self, x, weight_b, indices, weight_a, layer_idx, scale, y_offset,
                     y_slice_size)


LORA_KERNELS = {
    "npu_batch_gather_matmul": npu_batch_gather_matmul,
    "npu_batch_gather_matmul_": npu_batch_gather_matmul_,
}
