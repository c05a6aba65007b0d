# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""MLA ops (Multi-head Latent Attention, DeepSeek-V2/V3): ``torch.ops.ascend.mla_decode``,
``torch.ops.ascend.mla_prefill`` and ``torch.ops.ascend.mla_gather_context``.

Lengths are host lists (``actual_seq_lengths`` = cumulative query ends, ``actual_seq_lengths_kv``
= per-request KV lengths), as ``npu_fused_infer_attention_score`` takes them: nothing here reads a
device tensor back. There is no C++ kernel for MLA: the ``native`` backend runs the reference
for ``mla_decode`` and the native paged attention (over a scratch cache) for ``mla_prefill``.
"""

from __future__ import annotations

import torch

from ascend_ops._dispatch import eager_direct
from ascend_ops.checks import tensors as _checks
from ascend_ops.families import FAMILIES
from ascend_ops.ops.attention import fused_infer_attention
from ascend_ops.ops.kv_cache import reshape_and_cache

_MLA = FAMILIES["mla"]


def _check_lengths(name_q: str, total: int, ends: list[int], kv_lens: list[int]) -> None:
    if len(ends) != len(kv_lens):
        raise ValueError(
            f"actual_seq_lengths ({len(ends)}) and actual_seq_lengths_kv ({len(kv_lens)}) must have "
            "one entry per request"
        )
    prev = 0
    for i, (end, kv) in enumerate(zip(ends, kv_lens, strict=True)):
        if end < prev:
            raise ValueError("actual_seq_lengths must be non-decreasing cumulative query ends")
        if kv < end - prev:
            raise ValueError(f"actual_seq_lengths_kv[{i}]={kv} must be >= its query length {end - prev}")
        prev = end
    if ends and ends[-1] != total:
        raise ValueError(f"actual_seq_lengths must end at {name_q}'s token count {total}, got {ends[-1]}")


def _check_latent_cache(name: str, cache: torch.Tensor, ref: torch.Tensor) -> None:
    _checks.float_tensor(name, cache, 4)
    _checks.same_dtype(name, cache, "q_nope", ref)
    if cache.shape[2] != 1:
        raise ValueError(f"{name} must be [num_blocks, block_size, 1, width], got {tuple(cache.shape)}")


def _decode_checks(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, ends, kv_lens) -> None:
    _checks.float_tensor("q_nope", q_nope, 3)
    _checks.float_tensor("q_pe", q_pe, 3)
    _checks.same_dtype("q_pe", q_pe, "q_nope", q_nope)
    _check_latent_cache("kv_c_cache", kv_c_cache, q_nope)
    _check_latent_cache("k_pe_cache", k_pe_cache, q_nope)
    _checks.index_tensor("block_table", block_table, 2)
    if q_pe.shape[:2] != q_nope.shape[:2]:
        raise ValueError(f"q_pe {tuple(q_pe.shape)} must be [T, N, R] with q_nope's T, N {tuple(q_nope.shape)}")
    if kv_c_cache.shape[-1] != q_nope.shape[-1] or k_pe_cache.shape[-1] != q_pe.shape[-1]:
        raise ValueError(
            f"kv_c_cache width {kv_c_cache.shape[-1]} / k_pe_cache width {k_pe_cache.shape[-1]} must "
            f"equal q_nope's {q_nope.shape[-1]} / q_pe's {q_pe.shape[-1]} last dim"
        )
    if kv_c_cache.shape[:2] != k_pe_cache.shape[:2]:
        raise ValueError("kv_c_cache and k_pe_cache must have the same [num_blocks, block_size]")
    _check_lengths("q_nope", q_nope.shape[0], ends, kv_lens)
    if len(ends) > block_table.shape[0]:
        raise ValueError(f"block_table has {block_table.shape[0]} rows for {len(ends)} requests")
    need = -(-max(kv_lens, default=0) // kv_c_cache.shape[1])
    if need > block_table.shape[1]:
        raise ValueError(f"actual_seq_lengths_kv needs {need} blocks but block_table has "
                         f"{block_table.shape[1]} columns")


def _mla_decode_impl(q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c_cache: torch.Tensor,
                     k_pe_cache: torch.Tensor, block_table: torch.Tensor,
                     actual_seq_lengths: list[int], actual_seq_lengths_kv: list[int],
                     scale: float) -> torch.Tensor:
    ends, kv_lens = list(actual_seq_lengths), list(actual_seq_lengths_kv)
    _decode_checks(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, ends, kv_lens)
    table = block_table[: len(ends)]
    return _MLA.pick("mla_decode", q_nope).mla_decode(q_nope, q_pe, kv_c_cache, k_pe_cache, table,
                                                      ends, kv_lens, scale)


_mla_decode_op = torch.library.custom_op("ascend::mla_decode", mutates_args=())(_mla_decode_impl)


@_mla_decode_op.register_fake
def _(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, actual_seq_lengths, actual_seq_lengths_kv, scale):
    _decode_checks(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, list(actual_seq_lengths),
                   list(actual_seq_lengths_kv))
    return torch.empty_like(q_nope)


def _mla_decode_out_impl(q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c_cache: torch.Tensor,
                         k_pe_cache: torch.Tensor, block_table: torch.Tensor,
                         actual_seq_lengths: list[int], actual_seq_lengths_kv: list[int],
                         scale: float, out: torch.Tensor, softmax_lse: torch.Tensor,
                         workspace: torch.Tensor | None = None) -> None:
    ends, kv_lens = list(actual_seq_lengths), list(actual_seq_lengths_kv)
    _decode_checks(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, ends, kv_lens)
    _checks.same_shape("out", out, "q_nope", q_nope)
    _checks.same_dtype("out", out, "q_nope", q_nope)
    table = block_table[: len(ends)]
    _MLA.pick("mla_decode", q_nope).mla_decode_out(q_nope, q_pe, kv_c_cache, k_pe_cache, table,
                                                   ends, kv_lens, scale, out, softmax_lse, workspace)


_mla_decode_out_op = torch.library.custom_op(
    "ascend::mla_decode_out", mutates_args=("out", "softmax_lse"))(_mla_decode_out_impl)


@_mla_decode_out_op.register_fake
def _(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, actual_seq_lengths, actual_seq_lengths_kv,
      scale, out, softmax_lse, workspace=None):
    _decode_checks(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, list(actual_seq_lengths),
                   list(actual_seq_lengths_kv))


def mla_decode(q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c_cache: torch.Tensor,
               k_pe_cache: torch.Tensor, block_table: torch.Tensor, actual_seq_lengths: list[int],
               actual_seq_lengths_kv: list[int], scale: float, *, out: torch.Tensor | None = None,
               softmax_lse: torch.Tensor | None = None,
               workspace: torch.Tensor | None = None) -> torch.Tensor:
    """Paged latent attention (MLA decode with absorbed weights).

    Request b owns query rows ``actual_seq_lengths[b-1]:actual_seq_lengths[b]`` (the last q_len of
    its ``actual_seq_lengths_kv[b]`` positions; causal, bottom-right aligned). Each head scores
    latent row j by ``scale * (q_nope . kv_c[j] + q_pe . k_pe[j])`` and returns the
    softmax-weighted sum of ``kv_c`` rows.

    Shapes/dtypes: ``q_nope`` [T, N, L] (q_nope already multiplied by W_UK), ``q_pe`` [T, N, R];
    ``kv_c_cache`` [num_blocks, block_size, 1, L] and ``k_pe_cache`` [num_blocks, block_size, 1, R]
    of q_nope's dtype (contiguous on NPU); ``block_table`` int [>= B, max_blocks]; lengths are
    host lists of B ints. Returns [T, N, L] in q_nope's dtype (float32 math).
    NPU: ``npu_fused_infer_attention_score`` with ``query_rope``/``key_rope``, the latent cache as
    key and value, ``num_key_value_heads=1`` (vllm-ascend's MLA decode mapping; see
    ``ascend_ops.npu.mla``). CPU: the vectorised reference (no C++ kernel).
    NPU head count: FIA's MLA path takes N in {1, 2, 4, ..., 128}; another N is zero-padded to
    the next power of two for the call and the padded heads are dropped (vllm-ascend's
    ``num_heads_padded``).
    ``out`` ([T, N, L], q_nope's dtype): write the result there and return it; on NPU the
    ``npu_fused_infer_attention_score.out`` overload (``softmax_lse`` then required: a [1]
    tensor of q_nope's dtype kept with ``out``; ``workspace`` from
    :func:`mla_decode_workspace`, required when the call is captured in a graph task group),
    the form a captured call is re-issued with by a graph parameter update; on NPU N must then
    already be :func:`mla_decode_heads` (the caller pads, outside the captured call).
    Raises TypeError/ValueError naming the argument for bad dtypes, shapes or lengths.
    """
    args = (q_nope, q_pe, kv_c_cache, k_pe_cache, block_table,
            [int(v) for v in actual_seq_lengths], [int(v) for v in actual_seq_lengths_kv], float(scale))
    if out is None:
        if eager_direct(*args[:5]):
            return _mla_decode_impl(*args)
        return torch.ops.ascend.mla_decode(*args)
    if softmax_lse is None:
        raise ValueError("out= needs softmax_lse (a [1] tensor of q_nope's dtype kept with out)")
    if eager_direct(*args[:5], out, softmax_lse):
        _mla_decode_out_impl(*args, out, softmax_lse, workspace)
    else:
        torch.ops.ascend.mla_decode_out(*args, out, softmax_lse, workspace)
    return out


def mla_decode_heads(q_nope: torch.Tensor) -> int:
    """Query head count :func:`mla_decode` with ``out=`` must be given for ``q_nope`` ([T, N, L]).

    NPU: N rounded up to a power of two (FIA's MLA path takes N in {1, 2, 4, ..., 128}; op-plugin
    ``torch_npu-npu_fused_infer_attention_score.md``, "MLA约束"): the caller zero-pads q_nope /
    q_pe along the head axis to this count and keeps the first N heads of the result, as
    vllm-ascend's MLA decode does (``num_heads_padded``); a graph-captured call needs the padded
    tensors made outside the call. CPU backends: N (no padding needed)."""
    n = q_nope.shape[1]
    return _MLA.peek(q_nope).mla_decode_heads(n)


def mla_decode_workspace(q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c_cache: torch.Tensor,
                         k_pe_cache: torch.Tensor, block_table: torch.Tensor,
                         actual_seq_lengths: list[int], actual_seq_lengths_kv: list[int],
                         scale: float) -> torch.Tensor | None:
    """Workspace for a graph-captured :func:`mla_decode` ``out=`` call (arguments as for it,
    head count already padded to :func:`mla_decode_heads`).

    NPU: ``torch_npu._npu_fused_infer_attention_score_get_max_workspace`` with the MLA call's
    arguments (the largest workspace any lengths of these shapes need), passed to the captured
    call and every update of it: without one the operator allocates a workspace per call
    (op-plugin ``FusedInferAttentionScoreKernelNpuOpApi.cpp``), freed after capture. CPU
    backends need none and return None. Raises ValueError as :func:`mla_decode`, and on NPU for
    a head count that is not a power of two."""
    ends, kv_lens = [int(v) for v in actual_seq_lengths], [int(v) for v in actual_seq_lengths_kv]
    _decode_checks(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, ends, kv_lens)
    return _MLA.peek(q_nope).mla_decode_workspace(q_nope, q_pe, kv_c_cache, k_pe_cache,
                                                  block_table[: len(ends)], ends, kv_lens,
                                                  float(scale))


# ---- prefill ---------------------------------------------------------------------------------
def _prefill_checks(query, key, value, ends, kv_lens) -> None:
    _checks.float_tensor("query", query, 3)
    _checks.float_tensor("key", key, 3)
    _checks.float_tensor("value", value, 3)
    _checks.same_dtype("key", key, "query", query)
    _checks.same_dtype("value", value, "query", query)
    if key.shape[1:] != query.shape[1:]:
        raise ValueError(f"key {tuple(key.shape)} must be [S, N, D] with query's N, D {tuple(query.shape)}")
    if value.shape[:2] != key.shape[:2]:
        raise ValueError(f"value {tuple(value.shape)} must be [S, N, Dv] with key's S, N {tuple(key.shape)}")
    _check_lengths("query", query.shape[0], ends, kv_lens)
    if sum(kv_lens) != key.shape[0]:
        raise ValueError(
            f"actual_seq_lengths_kv must sum to key's row count {key.shape[0]}, got {sum(kv_lens)}"
        )


def _mla_prefill_impl(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                      actual_seq_lengths: list[int], actual_seq_lengths_kv: list[int],
                      scale: float) -> torch.Tensor:
    ends, kv_lens = list(actual_seq_lengths), list(actual_seq_lengths_kv)
    _prefill_checks(query, key, value, ends, kv_lens)
    # npu / native: the public KV write and FIA ops over a scratch paged cache (each counted and
    # dispatched as a call of its own); reference: the reference math
    return _MLA.pick("mla_prefill", query).mla_prefill(query, key, value, ends, kv_lens, scale,
                                                       reshape_and_cache, fused_infer_attention)


_mla_prefill_op = torch.library.custom_op("ascend::mla_prefill", mutates_args=())(_mla_prefill_impl)


@_mla_prefill_op.register_fake
def _(query, key, value, actual_seq_lengths, actual_seq_lengths_kv, scale):
    _prefill_checks(query, key, value, list(actual_seq_lengths), list(actual_seq_lengths_kv))
    return query.new_empty(*query.shape[:2], value.shape[-1])


def mla_prefill(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                actual_seq_lengths: list[int], actual_seq_lengths_kv: list[int],
                scale: float) -> torch.Tensor:
    """Causal varlen attention of MLA prefill on up-projected K/V.

    Request b's queries are rows ``actual_seq_lengths[b-1]:actual_seq_lengths[b]`` of ``query``,
    the last q_len of its ``actual_seq_lengths_kv[b]`` keys; its keys/values are the next
    ``actual_seq_lengths_kv[b]`` rows of ``key``/``value`` (requests in order: context rows then
    new rows of request 0, then request 1, ...). Query i sees keys j <= kv_len - q_len + i.

    Shapes/dtypes: ``query``/``key`` [*, N, Dqk] (nope + rope), ``value`` [S, N, Dv] with
    Dv <= Dqk, one float dtype; lengths are host lists. Returns [T, N, Dv] (float32 math).
    NPU: the K/V rows are scattered into a scratch paged cache with ATB ``_npu_reshape_and_cache``
    (V zero-padded to Dqk, since the paged FIA reads K and V with one head dim) and attended with
    ``npu_fused_infer_attention_score`` (TND, sparse_mode=3); the padded output columns are
    dropped. CPU: ``native`` uses the same scratch cache with the C++ paged attention,
    ``reference`` a padded-batch float32 computation.
    Raises TypeError/ValueError naming the argument for bad dtypes, shapes or lengths.
    """
    args = (query, key, value, [int(v) for v in actual_seq_lengths],
            [int(v) for v in actual_seq_lengths_kv], float(scale))
    if eager_direct(query, key, value):
        return _mla_prefill_impl(*args)
    return torch.ops.ascend.mla_prefill(*args)


# ---- context gather --------------------------------------------------------------------------
def _gather_impl(kv_c_cache: torch.Tensor, k_pe_cache: torch.Tensor, block_table: torch.Tensor,
                 context_lens: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    _checks.float_tensor("kv_c_cache", kv_c_cache, 4)
    _checks.float_tensor("k_pe_cache", k_pe_cache, 4)
    _checks.index_tensor("block_table", block_table, 2)
    if len(context_lens) > block_table.shape[0]:
        raise ValueError(f"block_table has {block_table.shape[0]} rows for {len(context_lens)} requests")
    if -(-max(context_lens, default=0) // kv_c_cache.shape[1]) > block_table.shape[1]:
        raise ValueError("context_lens needs more blocks than block_table has columns")
    return _MLA.pick("mla_gather_context", kv_c_cache).mla_gather_context(
        kv_c_cache, k_pe_cache, block_table, context_lens)


_gather_op = torch.library.custom_op("ascend::mla_gather_context", mutates_args=())(_gather_impl)


@_gather_op.register_fake
def _(kv_c_cache, k_pe_cache, block_table, context_lens):
    total = sum(int(v) for v in context_lens)
    return (kv_c_cache.new_empty(total, kv_c_cache.shape[-1]),
            k_pe_cache.new_empty(total, k_pe_cache.shape[-1]))


def mla_gather_context(kv_c_cache: torch.Tensor, k_pe_cache: torch.Tensor,
                       block_table: torch.Tensor, context_lens: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows 0..context_lens[b]-1 of every request b from the paged latent caches, concatenated.

    Shapes: caches [num_blocks, block_size, 1, L] / [num_blocks, block_size, 1, R];
    ``block_table`` int [>= B, max_blocks] (device); ``context_lens`` host list of B ints.
    Returns (kv_c [C, L], k_pe [C, R]) with C = sum(context_lens), request 0's rows first.
    All backends (NPU included) use block-table index ops whose output size comes from the host
    list (``block_table[req, pos // block_size]`` then ``index_select`` on the flattened caches),
    never a data-dependent shape; torch_npu's paged-cache load operator is not needed.
    Raises TypeError/ValueError naming the argument.
    """
    lens = [int(v) for v in context_lens]
    if eager_direct(kv_c_cache, k_pe_cache, block_table):
        return _gather_impl(kv_c_cache, k_pe_cache, block_table, lens)
    return torch.ops.ascend.mla_gather_context(kv_c_cache, k_pe_cache, block_table, lens)
