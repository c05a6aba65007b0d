"""Paged attention op: ``torch.ops.ascend.fused_infer_attention``."""

from __future__ import annotations

import torch

from ascend_ops import _checks, _native, _npu, reference
from ascend_ops._dispatch import count, eager_direct, select_backend


def _bsnd_rows(query_start_loc: torch.Tensor, seq_len: int) -> torch.Tensor:
    """Flat row indices (b * S + s) of the valid tokens of a BSND query."""
    qsl = query_start_loc.tolist()
    rows = [b * seq_len + s for b in range(len(qsl) - 1) for s in range(qsl[b + 1] - qsl[b])]
    return torch.tensor(rows, dtype=torch.long)


def _tnd(backend, query, key_cache, value_cache, block_table, qsl, seq_lens, scale, causal):
    if backend == "native":
        return _native.fused_infer_attention(
            query, key_cache, value_cache, block_table, qsl, seq_lens, scale, causal
        )
    _checks.attention_values(query, key_cache, block_table, qsl, seq_lens, "TND")
    if backend == "npu":
        return _npu.fused_infer_attention(
            query, key_cache, value_cache, block_table, qsl, seq_lens, scale, causal
        )
    return reference.fused_infer_attention(
        query, key_cache, value_cache, block_table, qsl, seq_lens, scale, causal
    )


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
) -> torch.Tensor:
    _checks.attention(query, key_cache, value_cache, block_table, query_start_loc, seq_lens, layout)
    backend = select_backend(query)
    count("fused_infer_attention", backend)
    args = (key_cache, value_cache, block_table, query_start_loc, seq_lens, scale, causal)
    if layout == "TND":
        return _tnd(backend, query, *args)
    _checks.attention_values(query, key_cache, block_table, query_start_loc, seq_lens, "BSND")
    b, s, h, d = query.shape
    rows = _bsnd_rows(query_start_loc, s).to(query.device)
    flat = query.reshape(b * s, h, d)
    out = torch.zeros_like(flat)
    out[rows] = _tnd(backend, flat.index_select(0, rows), *args)
    return out.view(b, s, h, d)


_attention_op = torch.library.custom_op("ascend::fused_infer_attention", mutates_args=())(
    _attention_impl
)


@_attention_op.register_fake
def _(query, key_cache, value_cache, block_table, query_start_loc, seq_lens, scale, causal=True, layout="TND"):
    _checks.attention(query, key_cache, value_cache, block_table, query_start_loc, seq_lens, layout)
    return torch.empty_like(query)


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
) -> torch.Tensor:
    """Attention over a paged KV cache for prefill, chunked prefill, prefix hits and decode.

    Semantics of ``torch_npu.npu_fused_infer_attention_score`` with paged KV (block_table,
    block_size, actual_seq_lengths = cumulative query ends, actual_seq_lengths_kv = seq_lens).

    Shapes/dtypes: ``query`` TND [T, Hq, D] (or BSND [B, S, Hq, D] with ``layout="BSND"``;
    request b's valid rows are the first qsl[b+1]-qsl[b] of its S, the rest return zeros);
    ``key_cache``/``value_cache`` [num_blocks, block_size, Hk, D] of query's dtype
    (float32/bfloat16/float16), may be strided views; ``block_table`` int [B, max_blocks];
    ``query_start_loc`` int [B+1] cumulative query lengths from 0; ``seq_lens`` int [B] KV length
    per request including this step's tokens (already written to the cache).
    Request b's q_len queries are the last q_len of its seq_lens[b] positions; with ``causal``
    query i sees kv positions j <= seq_lens[b] - q_len + i, otherwise all of them. GQA/MQA: query
    head h reads kv head h // (Hq // Hk). Math in float32; returns query's shape and dtype.
    ``scale`` multiplies q.k (usually head_dim ** -0.5).
    NPU: ``npu_fused_infer_attention_score(..., input_layout="TND", sparse_mode=3`` with the
    2048x2048 causal mask, or ``sparse_mode=0`` when not causal).
    Raises ValueError for an unknown ``layout``, Hq % Hk != 0, inconsistent lengths, or block ids
    outside the cache; TypeError for wrong dtypes.
    """
    args = (query, key_cache, value_cache, block_table, query_start_loc, seq_lens,
            float(scale), bool(causal), layout)
    if eager_direct(*args[:6]):
        return _attention_impl(*args)
    return torch.ops.ascend.fused_infer_attention(*args)
