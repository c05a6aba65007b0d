# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""NPU branch of the MLA ops: each mapped onto the torch_npu operator vllm-ascend uses.

torch_npu is found at call time (``ascend_ops.npu.layers.torch_npu``), so the simulated torch_npu
(``ascend_ops.simulator``) runs this branch on a CPU. Argument names follow the torch-npu 2.13.0
wheel's published schema of ``npu_fused_infer_attention_score``.

Head count: FIA's MLA path (``query_rope``/``key_rope`` with a 512-wide latent) takes a query
head count N in {1, 2, 4, ..., 128} (op-plugin ``docs/zh/custom_APIs/torch_npu/
torch_npu-npu_fused_infer_attention_score.md``, "MLA约束"). vllm-ascend zero-pads q_nope / q_pe
along the head axis to the next power of two, passes the padded count and keeps the first N
heads of the output (``vllm_ascend/attention/mla_v1.py``, ``num_heads_padded``); a zero query
head attends uniformly and its output rows are dropped, so the N real heads are unchanged.
"""

from __future__ import annotations

import torch

from ascend_ops.npu.layers import _causal_mask, _paged, torch_npu
from ascend_ops.reference import paged


def padded_heads(n: int) -> int:
    """The query head count FIA's MLA decode runs with: ``n`` rounded up to a power of two."""
    return 1 << (n - 1).bit_length() if n > 0 else n


def _pad_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """[T, N, D] -> [T, heads, D] with zero heads appended (a dense copy either way)."""
    if x.shape[1] == heads:
        return x.contiguous()
    return torch.nn.functional.pad(x, (0, 0, 0, heads - x.shape[1])).contiguous()


def _fia_args(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, ends, kv_lens, scale):
    """Positional and keyword arguments of the MLA call of ``npu_fused_infer_attention_score``
    (shared by the functional, ``.out`` and get-max-workspace overloads); the query head count
    must already be a power of two."""
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


def _need_padded(q_nope: torch.Tensor, what: str) -> None:
    n = q_nope.shape[1]
    if padded_heads(n) != n:
        raise ValueError(
            f"{what} on NPU needs a power-of-two head count (FIA's MLA path), got {n}: pad q_nope/q_pe "
            f"with zero heads to {padded_heads(n)} (and out to match) outside the captured call and "
            "keep the first heads of the result (ascend_ops.mla_decode_heads gives the count)"
        )


def mla_decode(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, ends, kv_lens, scale):
    """Paged latent attention through ``npu_fused_infer_attention_score``.

    Mapping from vllm-ascend's MLA decode (``vllm_ascend/attention/mla_v1.py``,
    ``AscendMLAImpl._forward_decode``): the latent "nope" cache is passed as both ``key`` and
    ``value``, the rope cache as ``key_rope``, ``q_pe`` as ``query_rope``, one KV head
    (``num_key_value_heads=1``), paged through ``block_table`` with host
    ``actual_seq_lengths_kv``. We use its TND form (``actual_seq_lengths`` = cumulative query
    ends, ``sparse_mode=3`` with the 2048x2048 mask), which serves one or more query tokens per
    request; the output has the value (latent) head dim. A head count that is not a power of two
    is zero-padded for the call and the padded heads are dropped from the result.
    """
    n = q_nope.shape[1]
    heads = padded_heads(n)
    args, kwargs = _fia_args(_pad_heads(q_nope, heads), _pad_heads(q_pe, heads), kv_c_cache,
                             k_pe_cache, block_table, ends, kv_lens, scale)
    out, _lse = torch_npu().npu_fused_infer_attention_score(*args, **kwargs)
    return out if heads == n else out[:, :n].contiguous()


def mla_decode_out(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, ends, kv_lens, scale, out,
                   softmax_lse, workspace):
    """The ``.out`` overload of the same call, writing ``out`` / ``softmax_lse``: what a captured
    call is re-issued with between ``graph_task_update_begin/end``. The outputs go in as
    ``out=[attention_out, softmax_lse]`` (torch_npu registers them as one ``Tensor[] out``;
    vllm-ascend's spelling). The head count must be a power of two already (ValueError
    otherwise): padding here would make update-time copies a captured graph does not replay."""
    _need_padded(q_nope, "mla_decode(out=...)")
    args, kwargs = _fia_args(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, ends, kv_lens, scale)
    torch_npu().npu_fused_infer_attention_score.out(
        *args, **kwargs, workspace=workspace, out=[out, softmax_lse]
    )


def mla_decode_workspace(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, ends, kv_lens, scale):
    """``_npu_fused_infer_attention_score_get_max_workspace`` with the MLA call's arguments (the
    largest workspace any lengths of these shapes need), as vllm-ascend sizes the workspace of
    its captured MLA decode (``vllm_ascend/attention/mla_v1.py``)."""
    _need_padded(q_nope, "mla_decode_workspace")
    args, kwargs = _fia_args(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, ends, kv_lens, scale)
    return torch_npu()._npu_fused_infer_attention_score_get_max_workspace(*args, **kwargs)


def mla_decode_heads(n: int) -> int:
    """The head count a graph-captured decode call must be given (:func:`padded_heads`)."""
    return padded_heads(n)


def mla_prefill(query, key, value, ends, kv_lens, scale, write, attend):
    """The paged FIA over a scratch paged cache (``reference.paged.paged_prefill``), with the
    op layer's ``write`` (reshape_and_cache) and ``attend`` (fused_infer_attention)."""
    return paged.paged_prefill(query, key, value, ends, kv_lens, scale, write, attend)


#: block-table index ops on the device (no torch_npu operator needed)
mla_gather_context = paged.gather_context
