# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""NPU branch of ``encoder_attention``: ``torch_npu.npu_fused_infer_attention_score`` on packed
(unpaged) TND query, key and value, as vllm-ascend's vision-encoder attention calls it on Atlas
A2/A3 (``vllm_ascend/ops/mm_encoder_attention.py``@182b75e, ``AscendMMEncoderAttention._run_vit_fia``:
``input_layout="TND"``, ``block_table=None``, ``atten_mask=None``, ``sparse_mode=0``,
``pre_tokens = next_tokens = 2147483647``, ``actual_seq_lengths`` and ``actual_seq_lengths_kv``
both the host list ``cu_seqlens[1:]``; that module moved there from ``_npu_flash_attention_unpad``
in commit 80e9cea7, "ViT encoder ACL graph").

Head-dim padding as vllm-ascend's ``_maybe_pad_qkv``: a head dim strictly between 64 and 128
(Qwen2.5-VL's 80, Qwen3-VL's 72) is zero-padded to 128 and the output cut back; zero key
columns leave the scores unchanged and zero value columns give zero outputs, so the result is
exact. Any other head dim that is not a multiple of 16 is padded to the next multiple of 16 (the
operator's rule: "输入类型全为float16、bfloat16时, D轴需16对齐", torch-npu 2.13.0
``_op_plugin_docs.py``, npu_fused_infer_attention_score, Q_S > 1); this case is ours, not
vllm-ascend's. The operator takes float16 / bfloat16 query, key and value (same document);
float32 raises ValueError.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ascend_ops.npu.layers import torch_npu

#: vllm-ascend's padding bounds (mm_encoder_attention.py MIN_PAD_SIZE / MAX_PAD_SIZE)
MIN_PAD_SIZE = 64
MAX_PAD_SIZE = 128
#: pre_tokens / next_tokens vllm-ascend passes (SWA_INT_MAX: no sliding window)
_NO_WINDOW = 2147483647
#: largest head dim the operator takes (_op_plugin_docs.py: 支持D轴小于等于512)
MAX_HEAD_DIM = 512


def padded_head_dim(d: int) -> int:
    """The head dim the operator is called with for a head dim ``d``."""
    if MIN_PAD_SIZE < d < MAX_PAD_SIZE:
        return MAX_PAD_SIZE
    return -(-d // 16) * 16


def encoder_attention(query, key, value, cu_seqlens, scale, ends):
    if query.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"encoder_attention on the NPU needs float16 or bfloat16 query/key/value "
                         f"(npu_fused_infer_attention_score's dtypes), got {query.dtype}")
    t, hq, d = query.shape
    if t == 0:
        return torch.empty_like(query)
    padded = padded_head_dim(d)
    if padded > MAX_HEAD_DIM:
        raise ValueError(f"encoder_attention on the NPU takes head dims up to {MAX_HEAD_DIM} "
                         f"(npu_fused_infer_attention_score), got {d}")
    pad = (0, padded - d)
    q, k, v = (F.pad(x, pad) if padded != d else x.contiguous() for x in (query, key, value))
    out, _lse = torch_npu().npu_fused_infer_attention_score(
        q, k, v,
        num_heads=hq,
        num_key_value_heads=key.shape[1],
        input_layout="TND",
        scale=scale,
        sparse_mode=0,
        pre_tokens=_NO_WINDOW,
        next_tokens=_NO_WINDOW,
        actual_seq_lengths=list(ends),
        actual_seq_lengths_kv=list(ends),
    )
    return out[..., :d].contiguous() if padded != d else out
