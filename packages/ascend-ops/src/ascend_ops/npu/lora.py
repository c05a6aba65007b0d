# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""NPU branch of the LoRA ops.

Device operator: ``torch_npu.npu_batch_gather_matmul_`` (op-plugin, GE op ``AddLora``; schema
``npu_batch_gather_matmul_(Tensor(a!) self, Tensor x, Tensor weight_b, Tensor indices,
Tensor? weight_a=None, int layer_idx=0, float scale=1e-3, int y_offset=0, int y_slice_size=-1)``
in the torch-npu 2.13.0 wheel's ``npu_native_functions_by_codegen.yaml``; semantics and limits
from ``torch_npu/_op_plugin_docs.py``): the batched gather matrix-vector product (BGMV) that adds
``scale * (x[t] @ weight_a[indices[t], layer_idx]^T) @ weight_b[indices[t], layer_idx]^T`` into
``self[t, y_offset:y_offset + y_slice_size]``; without ``weight_a`` it adds
``scale * x[t] @ weight_b[indices[t], layer_idx]^T``. vLLM's stacked LoRA weights
([slots, 1, rank, in] and [slots, 1, out, rank]) are its ``[W, L, R, H1]`` / ``[W, L, H2, R]``
with ``layer_idx=0``. A negative index is a token without adapter: the operator's own example
draws indices from [-1, W), and the row is left unchanged.

The operator is documented for float16 only, with R a multiple of 16 in [16, 128] and H1, H2
multiples of 16 (``_op_plugin_docs.py``, 参数说明). Calls outside those limits (bfloat16 models,
the float32 LoRA buffers vLLM allocates, rank 8) run as a composition of aten device ops instead
(one GEMM over all slots + a one-hot selection, ``ascend_ops.native.lora``): no host
synchronisation and static shapes, so both forms are valid inside a captured ACL graph.

The operator is documented for Atlas A2 only (``_op_plugin_docs.py``, 支持的型号: "Atlas A2
训练系列产品/Atlas 800I A2 推理产品"); on other products (A3, 310P) every call takes the aten
composition. The product is told by the SoC name ``torch.npu.get_device_name()`` returns
(aclrtGetSocName), mapped to a family as vllm-ascend does (vllm-project/vllm-ascend@182b75e
``vllm_ascend/device/hardware.py``: ``ascend910b1`` ... ``ascend910b4-1`` are A2,
``ascend910_93xx`` A3, ``ascend310p*`` 310P).

vllm-ascend's own LoRA kernels (``bgmv_shrink``/``sgmv_expand`` in its ``csrc``) are not part of
torch_npu and are not used. The segment (sgmv) forms expand the segments to per-token indices on
the device (``repeat_interleave`` with a host ``output_size``) and call the per-token form.
"""

from __future__ import annotations

import torch

from ascend_ops.native import lora as _native_lora
from ascend_ops.npu.layers import torch_npu

#: rank limits of npu_batch_gather_matmul's weight_a (_op_plugin_docs.py: R in [16, 128], % 16).
RANK_MIN, RANK_MAX, ALIGN = 16, 128, 16


def _w4(w: torch.Tensor) -> torch.Tensor:
    return w if w.dim() == 4 else w.unsqueeze(1)


def on_a2() -> bool:
    """True on an Atlas A2 NPU (SoC name ``Ascend910B*``, vllm-ascend's hardware.py table)."""
    return str(torch.npu.get_device_name()).lower().startswith("ascend910b")


def _fits(y, x, weights, y_offset, size, fused) -> bool:
    """True when the call is within npu_batch_gather_matmul's documented limits (products too)."""
    tensors = (y, x, *weights)
    if any(t.dtype != torch.float16 for t in tensors) or x.shape[0] == 0:
        return False
    if x.shape[1] % ALIGN or size % ALIGN or y.dim() != 2:
        return False
    if fused:
        rank = weights[0].shape[-2]
        if rank % ALIGN or not RANK_MIN <= rank <= RANK_MAX:
            return False
    return 0 <= y_offset < y.shape[1] and y_offset + size <= y.shape[1] and on_a2()


def lora_shrink(x, lora_a, indices, scale, out):
    a = _w4(lora_a)
    rank = a.shape[2]
    if _fits(out, x, (a,), 0, rank, fused=False):
        out[:, :rank].zero_()
        torch_npu().npu_batch_gather_matmul_(out, x, a, _native_lora.cast(indices, torch.int32), None,
                                             layer_idx=0, scale=float(scale), y_offset=0,
                                             y_slice_size=rank)
        return out
    return _native_lora.lora_shrink(x, lora_a, indices, scale, out)


def lora_expand(x, lora_b, indices, y, y_offset, y_slice_size, add_inputs):
    b = _w4(lora_b)
    if add_inputs and b.shape[2] == y_slice_size and _fits(y, x, (b,), y_offset, y_slice_size,
                                                          fused=False):
        torch_npu().npu_batch_gather_matmul_(y, x, b, _native_lora.cast(indices, torch.int32), None, layer_idx=0,
                                             scale=1.0, y_offset=y_offset,
                                             y_slice_size=y_slice_size)
        return y
    return _native_lora.lora_expand(x, lora_b, indices, y, y_offset, y_slice_size, add_inputs)


def lora_linear(y, x, lora_a, lora_b, indices, scale, y_offset, y_slice_size):
    a, b = _w4(lora_a), _w4(lora_b)
    if b.shape[2] == y_slice_size and _fits(y, x, (a, b), y_offset, y_slice_size, fused=True):
        torch_npu().npu_batch_gather_matmul_(y, x, b, _native_lora.cast(indices, torch.int32), a, layer_idx=0,
                                             scale=float(scale), y_offset=y_offset,
                                             y_slice_size=y_slice_size)
        return y
    return _native_lora.lora_linear(y, x, lora_a, lora_b, indices, scale, y_offset, y_slice_size)


def sgmv_shrink(x, lora_a, seg_lens, seg_lora, num_tokens, scale, out):
    idx = _native_lora.segments_to_tokens(seg_lens, seg_lora, num_tokens, x.shape[0])
    return lora_shrink(x, lora_a, idx, scale, out)


def sgmv_expand(x, lora_b, seg_lens, seg_lora, num_tokens, y, y_offset, y_slice_size, add_inputs):
    idx = _native_lora.segments_to_tokens(seg_lens, seg_lora, num_tokens, x.shape[0])
    return lora_expand(x, lora_b, idx, y, y_offset, y_slice_size, add_inputs)
