# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""NPU branch of ``mrope``: ``torch_npu.npu_mrope`` in MRoPE mode (torch-npu 2.13.0 schema
``npu_mrope(Tensor positions, Tensor query, Tensor key, Tensor cos_sin_cache, int head_size, *,
int[]? mrope_section=None, str? rotary_mode='half', str? cache_mode='default')``, in the wheel's
``npu_native_functions_by_codegen.yaml``).

Semantics and limits from op-plugin ``docs/zh/custom_APIs/torch_npu/torch_npu-npu_mrope.md``
@09fca6f: positions [3, num_tokens]; ``mrope_section`` one of [16, 24, 24], [24, 20, 20],
[8, 12, 12] (3 sections); ``cache_mode='default'`` is the sectioned split (Qwen2-VL),
``'interleave'`` the interleaved one (Qwen3-VL; its formula takes the width frequencies up to
``3 * mrope_section[1]``, the same bound as vLLM's ``3 * mrope_section[2]`` for every documented
3-section list, where the last two sections are equal); head_size and rotary_dim multiples of 32
(float16 / bfloat16) or 16 (float32); query, key and cache in one dtype.

vllm-ascend calls the operator for Qwen2/2.5-VL's [16, 24, 24] with ``rotary_mode='half'``
(``vllm_ascend/ops/rotary_embedding.py``@182b75e, ``AscendMRotaryEmbedding.forward_oot``) and
sends interleaved M-RoPE to a Triton kernel with the note that the operator needs a newer CANN
(8.5.0): the interleaved call here follows the operator's documentation and is not proven on
hardware (docs/hardware-checklist.md). Any other case (a section list the document does not
name, an unaligned head_size or rotary_dim) runs the reference math in aten ops on the device.
"""

from __future__ import annotations

import torch

from ascend_ops.npu.layers import torch_npu
from ascend_ops.reference.mrope import mrope as reference_mrope

#: the 3-section mrope_section lists npu_mrope documents (torch_npu-npu_mrope.md@09fca6f, 参数说明)
DOCUMENTED_SECTIONS = ([16, 24, 24], [24, 20, 20], [8, 12, 12])


def _aligned(n: int, dtype: torch.dtype) -> bool:
    # torch_npu-npu_mrope.md@09fca6f (约束说明): multiples of 32 for float16/bfloat16, 16 for float32
    return n % (16 if dtype == torch.float32 else 32) == 0


def mrope(positions, query, key, head_size, cos_sin_cache, mrope_section, interleaved, is_neox):
    table = cos_sin_cache.to(query.dtype)  # npu_mrope: query, key and cache share one dtype
    section = [int(s) for s in mrope_section]
    if (section not in DOCUMENTED_SECTIONS or not _aligned(head_size, query.dtype)
            or not _aligned(table.shape[-1], query.dtype)):
        return reference_mrope(positions, query, key, head_size, table, section, interleaved,
                               is_neox)
    t = positions.shape[1]
    q_out, k_out = torch_npu().npu_mrope(
        positions.contiguous(),
        query.reshape(t, -1).contiguous(),
        key.reshape(t, -1).contiguous(),
        table.contiguous(),
        head_size,
        mrope_section=section,
        # op-plugin RopeWithSinCosCacheKernelNpuOpApi.cpp accepts "half" / "interleave" only
        rotary_mode="half" if is_neox else "interleave",
        cache_mode="interleave" if interleaved else "default",
    )
    return q_out.reshape(query.shape), k_out.reshape(key.shape)
