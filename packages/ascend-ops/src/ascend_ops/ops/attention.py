# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Paged attention ops: ``torch.ops.ascend.fused_infer_attention`` and its ``.out`` form
``torch.ops.ascend.fused_infer_attention_out`` (graph-capturable, parameter-updatable)."""

from __future__ import annotations

from typing import Any

import torch

from ascend_ops._dispatch import eager_direct
from ascend_ops.checks import attention as _checks
from ascend_ops.checks import kv_cache as _checks_kv
from ascend_ops.checks import tensors as _checks_tensors
from ascend_ops.families import FAMILIES
from ascend_ops.reference.paged import StepLengths

_ATTENTION = FAMILIES["attention"]
#: the op layer's memo of checked host lengths (every attention layer of a step passes the same
#: lists): owned here, passed to the backend on each call; the backends keep no state
_STEP = StepLengths()


def _bsnd_rows(query_start_loc: torch.Tensor, seq_len: int) -> torch.Tensor:
    """Flat row indices (b * S + s) of the valid tokens of a BSND query."""
    qsl = query_start_loc.tolist()
    rows = [b * seq_len + s for b in range(len(qsl) - 1) for s in range(qsl[b + 1] - qsl[b])]
    return torch.tensor(rows, dtype=torch.long)


def _attention_impl(
    query: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    block_table: torch.Tensor,
    query_start_loc: torch.Tensor,
    seq_lens: torch.Tensor,
    scale: float,
    causal: bool = True,
    layout: str = "TND",
    actual_seq_lengths: list[int] | None = None,
    actual_seq_lengths_kv: list[int] | None = None,
    k_scale: float = 1.0,
    v_scale: float = 1.0,
) -> torch.Tensor:
    _checks.attention(query, key_cache, value_cache, block_table, query_start_loc, seq_lens, layout)
    _checks_kv.cache_scales(query, key_cache, k_scale, v_scale)
    if layout == "BSND":
        _checks.attention_values(query, key_cache, block_table, query_start_loc, seq_lens, "BSND")
    impl = _ATTENTION.pick("fused_infer_attention", query)
    args = (key_cache, value_cache, block_table, query_start_loc, seq_lens, scale, causal)
    if layout == "TND":
        return impl.fused_infer_attention(query, *args, actual_seq_lengths,
                                          actual_seq_lengths_kv, k_scale, v_scale, step=_STEP)
    b, s, h, d = query.shape
    rows = _bsnd_rows(query_start_loc, s).to(query.device)
    flat = query.reshape(b * s, h, d)
    out = torch.zeros_like(flat)
    out[rows] = impl.fused_infer_attention(flat.index_select(0, rows), *args, None, None, k_scale,
                                           v_scale, step=_STEP)
    return out.view(b, s, h, d)


_attention_op = torch.library.custom_op("ascend::fused_infer_attention", mutates_args=())(
    _attention_impl
)


@_attention_op.register_fake
def _(query, key_cache, value_cache, block_table, query_start_loc, seq_lens, scale, causal=True,
      layout="TND", actual_seq_lengths=None, actual_seq_lengths_kv=None, k_scale=1.0, v_scale=1.0):
    _checks.attention(query, key_cache, value_cache, block_table, query_start_loc, seq_lens, layout)
    return torch.empty_like(query)


def _attention_out_impl(
    query: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    block_table: torch.Tensor,
    query_start_loc: torch.Tensor,
    seq_lens: torch.Tensor,
    scale: float,
    causal: bool,
    actual_seq_lengths: list[int] | None,
    actual_seq_lengths_kv: list[int] | None,
    out: torch.Tensor,
    softmax_lse: torch.Tensor,
    workspace: torch.Tensor | None = None,
    k_scale: float = 1.0,
    v_scale: float = 1.0,
) -> None:
    _checks.attention(query, key_cache, value_cache, block_table, query_start_loc, seq_lens, "TND")
    _checks_tensors.same_shape("out", out, "query", query)
    _checks_tensors.same_dtype("out", out, "query", query)
    _checks_kv.cache_scales(query, key_cache, k_scale, v_scale)
    _ATTENTION.pick("fused_infer_attention", query).fused_infer_attention(
        query, key_cache, value_cache, block_table, query_start_loc, seq_lens, scale, causal,
        actual_seq_lengths, actual_seq_lengths_kv, k_scale, v_scale, out, softmax_lse, workspace,
        step=_STEP)


_attention_out_op = torch.library.custom_op(
    "ascend::fused_infer_attention_out", mutates_args=("out", "softmax_lse")
)(_attention_out_impl)


@_attention_out_op.register_fake
def _(query, key_cache, value_cache, block_table, query_start_loc, seq_lens, scale, causal,
      actual_seq_lengths, actual_seq_lengths_kv, out, softmax_lse, workspace=None, k_scale=1.0,
      v_scale=1.0):
    _checks.attention(query, key_cache, value_cache, block_table, query_start_loc, seq_lens, "TND")


def fused_infer_attention(
    query: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    block_table: torch.Tensor,
    query_start_loc: torch.Tensor,
    seq_lens: torch.Tensor,
    scale: float,
    causal: bool = True,
    layout: str = "TND",
    *,
    actual_seq_lengths: list[int] | None = None,
    actual_seq_lengths_kv: list[int] | None = None,
    out: torch.Tensor | None = None,
    softmax_lse: torch.Tensor | None = None,
    workspace: torch.Tensor | None = None,
    k_scale: float = 1.0,
    v_scale: float = 1.0,
) -> torch.Tensor:
    """Attention over a paged KV cache for prefill, chunked prefill, prefix hits and decode.

    Semantics of ``torch_npu.npu_fused_infer_attention_score`` with paged KV (block_table,
    block_size, actual_seq_lengths = cumulative query ends, actual_seq_lengths_kv = seq_lens).

    Shapes/dtypes: ``query`` TND [T, Hq, D] (or BSND [B, S, Hq, D] with ``layout="BSND"``;
    request b's valid rows are the first qsl[b+1]-qsl[b] of its S, the rest return zeros);
    ``key_cache``/``value_cache`` [num_blocks, block_size, Hk, D] of query's dtype
    (float32/bfloat16/float16), or a narrower storage dtype written by
    :func:`~ascend_ops.reshape_and_cache` (float8_e4m3fn / float8_e5m2 read back as
    ``stored * k_scale`` / ``stored * v_scale``, float16/bfloat16 under float32 as a cast;
    ``ascend_ops/reference/kv_quant.py``, vLLM's ``kv_cache_dtype`` semantics), dequantized per
    call for the blocks in use (CPU branches only; the NPU branch raises ValueError naming the
    SoC rule); the NPU branch needs them contiguous (CPU branches accept
    strided views); ``block_table`` int [B, max_blocks];
    ``query_start_loc`` int [B+1] cumulative query lengths from 0; ``seq_lens`` int [B] KV length
    per request including this step's tokens (already written to the cache).
    Request b's q_len queries are the last q_len of its seq_lens[b] positions; with ``causal``
    query i sees kv positions j <= seq_lens[b] - q_len + i, otherwise all of them. GQA/MQA: query
    head h reads kv head h // (Hq // Hk). Math in float32; returns query's shape and dtype.
    ``scale`` multiplies q.k (usually head_dim ** -0.5).

    Host lengths (TND): ``actual_seq_lengths`` (list of B ints, cumulative query ends, the last
    equal to T) and ``actual_seq_lengths_kv`` (list of B ints) are what the NPU operator takes;
    pass them (built on the host once per step) to avoid reading ``query_start_loc`` /
    ``seq_lens`` back from the device, which the NPU branch must otherwise do with ``.tolist()``
    (a device-to-host sync, illegal inside a graph capture). When given they are authoritative
    for every backend (the tensors then only fix B).

    ``out`` (TND only): write the result into ``out`` ([T, Hq, D], query's dtype) and return it.
    On NPU this is ``npu_fused_infer_attention_score.out(..., workspace=workspace,
    out=[out, softmax_lse])``, the overload torch_npu's graph parameter
    update re-issues (``graph_task_update_begin/end``) so a captured call writes the same
    tensors; ``softmax_lse`` is then required (a [1] tensor of query's dtype: the operator's
    second output, unused as ``softmax_lse_flag`` is False) and ``workspace`` is the tensor
    from :func:`fused_infer_attention_workspace` (None lets the operator allocate one per call,
    which a call captured in a graph task group must not do).
    NPU: ``npu_fused_infer_attention_score(..., input_layout="TND", sparse_mode=3`` with the
    2048x2048 causal mask, or ``sparse_mode=0`` when not causal).
    Raises ValueError for an unknown ``layout``, Hq % Hk != 0, inconsistent lengths, block ids
    outside the cache (CPU branches), ``out`` with BSND or without ``softmax_lse``, or
    non-contiguous caches on NPU; TypeError for wrong dtypes.
    """
    host: dict[str, Any] = dict(
                actual_seq_lengths=_as_ints(actual_seq_lengths, "actual_seq_lengths"),
                actual_seq_lengths_kv=_as_ints(actual_seq_lengths_kv, "actual_seq_lengths_kv"),
                k_scale=float(k_scale), v_scale=float(v_scale))
    args = (query, key_cache, value_cache, block_table, query_start_loc, seq_lens,
            float(scale), bool(causal))
    if out is None:
        if eager_direct(*args[:6]):
            return _attention_impl(*args, layout, **host)
        return torch.ops.ascend.fused_infer_attention(*args, layout, **host)
    if layout != "TND":
        raise ValueError(f"out= is supported with layout='TND' only, got {layout!r}")
    if softmax_lse is None:
        raise ValueError("out= needs softmax_lse (a [1] tensor of query's dtype kept with out)")
    tail: tuple[Any, ...] = (host["actual_seq_lengths"], host["actual_seq_lengths_kv"], out,
                             softmax_lse, workspace, host["k_scale"], host["v_scale"])
    if eager_direct(*args[:6], out, softmax_lse):
        _attention_out_impl(*args, *tail)
    else:
        torch.ops.ascend.fused_infer_attention_out(*args, *tail)
    return out


def fused_infer_attention_workspace(
    query: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    block_table: torch.Tensor,
    scale: float,
    causal: bool,
    actual_seq_lengths: list[int],
    actual_seq_lengths_kv: list[int],
) -> torch.Tensor | None:
    """Workspace for a graph-captured :func:`fused_infer_attention` ``out=`` call.

    NPU: ``torch_npu._npu_fused_infer_attention_score_get_max_workspace`` with the call's
    arguments (the largest workspace any lengths of these shapes need), so parameter updates
    of the captured call reuse one buffer (as vllm-ascend does for its FIA graph path).
    CPU branches need none and return None. Arguments as for :func:`fused_infer_attention`.
    """
    return _ATTENTION.peek(query).fused_infer_attention_workspace(
        query, key_cache, value_cache, block_table,
        _as_ints(actual_seq_lengths, "actual_seq_lengths"),
        _as_ints(actual_seq_lengths_kv, "actual_seq_lengths_kv"), float(scale), bool(causal),
    )


def _as_ints(values, name: str) -> list[int] | None:
    if values is None:
        return None
    if isinstance(values, torch.Tensor):
        raise TypeError(
            f"{name} must be a host list of ints (built once per step from CPU metadata), "
            "not a tensor"
        )
    return [int(v) for v in values]
