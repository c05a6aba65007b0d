# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""CPU implementation of the MoE ops: vectorized torch (sort, gather, index_add, per-expert mm),
plus the C++ grouped matmuls of ``ascend_ops._C`` for decode-sized expert groups.

Routing is index shuffling that torch vectorizes. The expert matmuls at decode (a few rows per
expert) are bound by streaming the weights, and torch's per-expert ``mm`` calls stream them at
a fraction of memory bandwidth; ``_C.grouped_matmul`` reads every used expert's weights once,
over all experts in one OpenMP region. It takes N-major weights (stride 1 along K: vLLM's
[E, N, K] expert layout viewed as [E, K, N], what ``vllm_ascend_models`` passes) and runs while
the mean rows per expert stays at or below ``SMALL_GROUP_ROWS[dtype]`` (the crossover above
which torch's GEMM wins: float32 32, bf16 and fp16 8; measurement in benchmarks/README.md,
"Design measurements behind ascend-ops kernels"). Other layouts and larger groups use the
per-expert torch loop. Checked against the loop-based
references in ``ascend_ops.reference.moe`` (same semantics, written out there).

Prepacked experts: :func:`pack` copies a weight once into ``_C``'s column-block layout
(``csrc/moe_packed.cpp``: per expert, blocks of 32 output columns each holding its K x 32 weights
contiguously, k-major; bf16 in k pairs for AVX512-BF16's ``vdpbf16ps``), kept here under an
integer handle like ``native.linear``'s packs; ``grouped_matmul(..., handle)`` at decode sizes
then streams the contiguous blocks of a work item (up to 4 on AVX-512 builds, 2 elsewhere);
``grouped_matmul_swiglu(..., handle)`` takes each gate block with its up block in one work item
and writes only the SwiGLU (``csrc/moe_packed_swiglu.cpp``). Packs of 2 MiB or more sit on huge
pages (``native.host_memory``). The
plain weight stays the source of truth: a pack is rebuilt when its weight was written in place
(``_version``) or moved (``data_ptr``). The copy costs the experts' weight bytes once more in
host memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ascend_ops._dispatch import native_module
from ascend_ops.checks import tensors as _checks
from ascend_ops.native import host_memory
from ascend_ops.native.layers import DTYPE_CODES
from ascend_ops.native.pack_registry import PackRegistry

SMALL_GROUP_ROWS = {torch.float32: 32, torch.bfloat16: 8, torch.float16: 8}

#: dtypes whose expert weights get packed (:func:`pack`) on every build. float32 was left on the
#: N-major kernel on AVX-512 builds until the packed kernel's paired column blocks made the
#: packed float32 layer the faster one at decode shapes (moe_bench.py's layer, weights streamed
#: from memory; before and after in benchmarks/README.md, "Design measurements behind
#: ascend-ops kernels"). Without AVX-512 a 16-lane vector is two AVX2 halves and the N-major
#: kernel's 4 x 4 tiles do not fit the 16 ymm registers, so the packed kernel is the faster one
#: there too.
PACKED_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def packed_dtypes() -> tuple[torch.dtype, ...]:
    """The dtypes :func:`pack` is used for (:data:`PACKED_DTYPES`: every float dtype)."""
    return PACKED_DTYPES


def moe_gating_top_k(router_logits, top_k, scoring, renormalize, num_expert_group, topk_group,
                     routed_scaling_factor, bias):
    if num_expert_group == 1 and bias is None:  # the C++ kernel's case (csrc/moe_routing.cpp)
        logits = router_logits.contiguous()
        t, e = logits.shape
        weights = torch.empty(t, top_k, dtype=torch.float32)
        ids = torch.empty(t, top_k, dtype=torch.int32)
        native_module().moe_gating_top_k(
            logits.data_ptr(), weights.data_ptr(), ids.data_ptr(), t, e, top_k,
            scoring == "sigmoid", bool(renormalize), float(routed_scaling_factor),
            DTYPE_CODES[logits.dtype],
        )
        return weights, ids
    logits = router_logits.float()
    scores = torch.softmax(logits, dim=-1) if scoring == "softmax" else torch.sigmoid(logits)
    choice = scores + bias.float() if bias is not None else scores
    if num_expert_group > 1:
        t, e = choice.shape
        grouped = choice.view(t, num_expert_group, e // num_expert_group)
        if bias is not None:
            group_scores = grouped.topk(2, dim=-1).values.sum(dim=-1)
        else:
            group_scores = grouped.amax(dim=-1)
        kept = group_scores.topk(topk_group, dim=-1).indices
        keep = torch.zeros_like(group_scores, dtype=torch.bool).scatter_(1, kept, True)
        choice = grouped.masked_fill(~keep.unsqueeze(-1), float("-inf")).view(t, e)
    ids = choice.topk(top_k, dim=-1).indices
    weights = scores.gather(1, ids)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    if routed_scaling_factor != 1.0:
        weights = weights * routed_scaling_factor
    return weights, ids.to(torch.int32)


def moe_init_routing(x, expert_idx, num_experts=-1):
    num_tokens, k = expert_idx.shape
    if x.device.type == "cpu":  # one C++ call (csrc/moe_routing.cpp): counting sort + row gather
        x = x.contiguous()
        idx = expert_idx.contiguous()
        n = num_tokens * k
        expanded_x = x.new_empty(n, x.shape[1])
        row_idx = torch.empty(n, dtype=torch.int32)
        sorted_ids = torch.empty(n, dtype=torch.int32)
        native_module().moe_init_routing(
            x.data_ptr(), idx.data_ptr(), idx.dtype == torch.int64, expanded_x.data_ptr(),
            row_idx.data_ptr(), sorted_ids.data_ptr(), num_tokens, k, x.shape[1], x.element_size(),
        )
        return expanded_x, row_idx, sorted_ids
    flat = expert_idx.reshape(-1)  # token-major: position token * k + slot
    order = torch.sort(flat, stable=True).indices
    tokens = torch.div(order, k, rounding_mode="floor")
    slots = order % k
    expanded_x = x.index_select(0, tokens)
    expanded_row_idx = torch.empty(num_tokens * k, dtype=torch.int32, device=x.device)
    expanded_row_idx[slots * num_tokens + tokens] = torch.arange(
        num_tokens * k, dtype=torch.int32, device=x.device
    )
    return expanded_x, expanded_row_idx, flat.index_select(0, order).to(torch.int32)


def moe_finalize_routing(expanded_rows, scales, expanded_row_idx, expert_idx, skip, bias):
    num_tokens, k = scales.shape
    if skip is None and bias is None:  # one C++ call (csrc/moe_routing.cpp)
        rows = expanded_rows.contiguous()
        w = scales.float().contiguous()
        dest = expanded_row_idx.to(torch.int32).contiguous()
        out = rows.new_empty(num_tokens, rows.shape[1])
        native_module().moe_finalize_routing(
            rows.data_ptr(), w.data_ptr(), dest.data_ptr(), out.data_ptr(), num_tokens, k,
            rows.shape[1], DTYPE_CODES[rows.dtype],
        )
        return out
    dest = expanded_row_idx.long().view(k, num_tokens).t()  # [T, k]
    rows = expanded_rows.float()[dest]  # [T, k, H]
    if bias is not None:
        rows = rows + bias.float()[expert_idx.long()]
    out = torch.einsum("tk,tkh->th", scales.float(), rows)
    if skip is not None:
        out = out + skip.float()
    return out.to(expanded_rows.dtype)


@dataclass
class _Pack:
    packed: torch.Tensor
    shape: tuple[int, ...]
    version: int
    data_ptr: int


_registry: PackRegistry[_Pack] = PackRegistry()


def _build(weight: torch.Tensor) -> _Pack:
    mod = native_module()
    experts, k, n = weight.shape
    code = DTYPE_CODES[weight.dtype]
    packed = host_memory.empty(mod.grouped_weight_packed_size(experts, k, n, code), weight.dtype)
    w = weight.detach()
    mod.pack_grouped_weight(w.data_ptr(), packed.data_ptr(), experts, k, n, *w.stride(), code)
    return _Pack(packed, tuple(weight.shape), weight._version, weight.data_ptr())


def pack(weight: torch.Tensor) -> int:
    """Pack ``weight`` [E, K, N] (any strides, CPU, float32/bf16/fp16); return its handle."""
    return _registry.add(_build(weight))


def release(handle: int) -> None:
    """Drop a pack (no-op for -1 or an unknown handle)."""
    _registry.release(handle)


def pack_count() -> int:
    return _registry.count()


def _packed_entry(weight: torch.Tensor, handle: int) -> _Pack | None:
    entry = _registry.get(handle)
    if entry is None:
        return None
    if entry.shape != tuple(weight.shape):
        raise ValueError(f"handle {handle} was packed for a weight of shape {entry.shape}, "
                         f"not {tuple(weight.shape)}: pass the handle of this weight")
    if entry.version != weight._version or entry.data_ptr != weight.data_ptr():
        entry = _build(weight)  # written in place or moved since it was packed
        _registry.replace(handle, entry)
    return entry


def grouped_matmul(x, weight, group_list, handle: int = -1):
    num_experts, k, n = weight.shape
    small = x.shape[0] <= SMALL_GROUP_ROWS[x.dtype] * num_experts
    entry = _packed_entry(weight, handle) if small else None
    if entry is not None:
        x = x.contiguous()
        counts = group_list.to(torch.int64).contiguous()
        out = x.new_empty(x.shape[0], n)
        native_module().grouped_matmul_packed(
            x.data_ptr(), entry.packed.data_ptr(), counts.data_ptr(), out.data_ptr(), x.shape[0],
            k, n, num_experts, DTYPE_CODES[x.dtype],
        )
        return out
    if small and weight.stride(1) == 1:
        x = x.contiguous()
        counts = group_list.to(torch.int64).contiguous()
        out = x.new_empty(x.shape[0], n)
        native_module().grouped_matmul(
            x.data_ptr(), weight.data_ptr(), counts.data_ptr(), out.data_ptr(), x.shape[0], k, n,
            num_experts, weight.stride(0), weight.stride(2), DTYPE_CODES[x.dtype],
        )
        return out
    out = x.new_zeros(x.shape[0], n)
    counts = group_list.tolist()
    _checks.group_counts(counts, x.shape[0])
    start = 0
    for e, rows in enumerate(counts):
        if rows:
            torch.mm(x[start : start + rows], weight[e], out=out[start : start + rows])
        start += rows
    return out


def grouped_matmul_swiglu(x, weight, group_list, handle: int = -1):
    """swiglu(grouped_matmul(x, weight, group_list, handle)) with the same bits; in one pass of
    ``_C.grouped_matmul_packed_swiglu`` (``csrc/moe_packed_swiglu.cpp``) where the packed kernel
    would run and the up half starts on a column block (N / 2 a multiple of 32), else the two
    ops one after the other."""
    num_experts, k, n = weight.shape
    small = x.shape[0] <= SMALL_GROUP_ROWS[x.dtype] * num_experts
    entry = _packed_entry(weight, handle) if small and n % 64 == 0 else None
    if entry is None:
        from ascend_ops.native import layers as _native

        return _native.swiglu(grouped_matmul(x, weight, group_list, handle))
    x = x.contiguous()
    counts = group_list.to(torch.int64).contiguous()
    out = x.new_empty(x.shape[0], n // 2)
    native_module().grouped_matmul_packed_swiglu(
        x.data_ptr(), entry.packed.data_ptr(), counts.data_ptr(), out.data_ptr(), x.shape[0], k,
        n, num_experts, DTYPE_CODES[x.dtype],
    )
    return out


#: the family table's name for :func:`pack`
pack_grouped_matmul_weight = pack
