# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""NPU branch of the MLA ops: each mapped onto the torch_npu operator vllm-ascend uses.

torch_npu is found at call time (``ascend_ops._npu.torch_npu``), so the simulated torch_npu
(``ascend_ops.simulator``) runs this branch on a CPU. Argument names follow the torch-npu 2.13.0
wheel's published schema of ``npu_fused_infer_attention_score``.
"""

from __future__ import annotations

import torch

from ascend_ops._npu import _causal_mask, _paged, torch_npu


def _fia_args(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, ends, kv_lens, scale):
    """Positional and keyword arguments of the MLA call of ``npu_fused_infer_attention_score``
    (shared by the functional and the ``.out`` overloads)."""
    paged_kv = _paged(kv_c_cache, "kv_c_cache")
    args = (q_nope.contiguous(), paged_kv, paged_kv)
    kwargs = dict(
        query_rope=q_pe.contiguous(),
        key_rope=_paged(k_pe_cache, "k_pe_cache"),
        actual_seq_lengths=list(ends),
        actual_seq_lengths_kv=list(kv_lens),
        block_table=block_table if block_table.dtype == torch.int32 else block_table.to(torch.int32),
        block_size=kv_c_cache.shape[1],
        num_heads=q_nope.shape[1],
        num_key_value_heads=1,
        scale=scale,
        input_layout="TND",
        atten_mask=_causal_mask(q_nope.device),
        sparse_mode=3,
    )
    return args, kwargs


def mla_decode(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, ends, kv_lens, scale):
    """Paged latent attention through ``npu_fused_infer_attention_score``.

    Mapping from vllm-ascend's MLA decode (``vllm_ascend/attention/mla_v1.py``,
    ``AscendMLAImpl._forward_decode``): the latent "nope" cache is passed as both ``key`` and
    ``value``, the rope cache as ``key_rope``, ``q_pe`` as ``query_rope``, one KV head
    (``num_key_value_heads=1``), paged through ``block_table`` with host
    ``actual_seq_lengths_kv``. We use its TND form (``actual_seq_lengths`` = cumulative query
    ends, ``sparse_mode=3`` with the 2048x2048 mask), which serves one or more query tokens per
    request; the output has the value (latent) head dim.
    """
    args, kwargs = _fia_args(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, ends, kv_lens,
                             scale)
    out, _lse = torch_npu().npu_fused_infer_attention_score(*args, **kwargs)
    return out


def mla_decode_out(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, ends, kv_lens, scale, out,
                   softmax_lse, workspace):
    """The ``.out`` overload of the same call, writing ``out`` / ``softmax_lse``: what a captured
    call is re-issued with between ``graph_task_update_begin/end``."""
    args, kwargs = _fia_args(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, ends, kv_lens,
                             scale)
    torch_npu().npu_fused_infer_attention_score.out(
        *args, **kwargs, workspace=workspace, attention_out=out, softmax_lse=softmax_lse
    )
