# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""MoE ops: ``torch.ops.ascend.moe_gating_top_k``, ``moe_init_routing``, ``moe_finalize_routing``,
``grouped_matmul``, ``grouped_matmul_swiglu``.

Semantics and index conventions are written out in ``ascend_ops.reference.moe`` (the oracle); the
NPU branch maps each op onto its torch_npu operator (``ascend_ops.npu.moe``); the ``native``
backend runs a vectorized torch implementation (``ascend_ops.native.moe``), with a C++ kernel
(``_C.grouped_matmul``) for ``grouped_matmul`` at decode-sized groups on N-major weights, and
kernels on prepacked experts (``_C.grouped_matmul_packed``, ``_C.grouped_matmul_packed_swiglu``).
"""

from __future__ import annotations

import torch

from ascend_ops._dispatch import eager_direct
from ascend_ops.checks import tensors as _checks
from ascend_ops.families import FAMILIES
from ascend_ops.native import moe as _native_moe

_MOE = FAMILIES["moe"]

SCORING_FUNCTIONS = ("softmax", "sigmoid")


def _present(*tensors):
    """The arguments that are not None (optional tensors), for ``eager_direct``."""
    return [t for t in tensors if t is not None]


# ----------------------------------------------------------------------------- argument checks


def check_gating(router_logits, top_k, scoring, num_expert_group, topk_group, bias) -> None:
    _checks.float_tensor("router_logits", router_logits, ndim=2)
    num_experts = router_logits.shape[1]
    if scoring not in SCORING_FUNCTIONS:
        raise ValueError(f"scoring must be one of {SCORING_FUNCTIONS}, got {scoring!r}")
    if num_expert_group < 1 or num_experts % num_expert_group:
        raise ValueError(
            f"num_expert_group={num_expert_group} must be >= 1 and divide the number of experts "
            f"({num_experts})"
        )
    if not 1 <= topk_group <= num_expert_group:
        raise ValueError(f"topk_group={topk_group} must be between 1 and num_expert_group={num_expert_group}")
    eligible = topk_group * (num_experts // num_expert_group)
    if not 1 <= top_k <= eligible:
        raise ValueError(
            f"top_k={top_k} must be between 1 and the number of selectable experts ({eligible}: "
            f"{num_experts} experts, topk_group={topk_group} of num_expert_group={num_expert_group})"
        )
    if bias is not None:
        _checks.float_tensor("bias", bias, ndim=1)
        if bias.shape[0] != num_experts:
            raise ValueError(f"bias must have one entry per expert ({num_experts}), got {tuple(bias.shape)}")
        if num_expert_group > 1 and num_experts // num_expert_group < 2:
            raise ValueError("with bias, each expert group needs >= 2 experts (group score = top-2 sum)")


def check_init_routing(x, expert_idx) -> None:
    _checks.float_tensor("x", x, ndim=2)
    _checks.index_tensor("expert_idx", expert_idx, ndim=2)
    if expert_idx.shape[0] != x.shape[0]:
        raise ValueError(f"expert_idx rows ({expert_idx.shape[0]}) must equal x rows ({x.shape[0]})")


def check_finalize(expanded_rows, scales, expanded_row_idx, expert_idx, skip, bias) -> None:
    _checks.float_tensor("expanded_rows", expanded_rows, ndim=2)
    _checks.float_tensor("scales", scales, ndim=2)
    _checks.index_tensor("expanded_row_idx", expanded_row_idx, ndim=1)
    _checks.index_tensor("expert_idx", expert_idx, ndim=2)
    t, k = scales.shape
    if expert_idx.shape != scales.shape:
        raise ValueError(f"expert_idx shape {tuple(expert_idx.shape)} must equal scales shape {(t, k)}")
    if expanded_row_idx.shape[0] != t * k or expanded_rows.shape[0] != t * k:
        raise ValueError(
            f"expanded_rows ({expanded_rows.shape[0]} rows) and expanded_row_idx "
            f"({expanded_row_idx.shape[0]}) must both have tokens*top_k = {t * k} entries"
        )
    hidden = expanded_rows.shape[1]
    if skip is not None:
        _checks.float_tensor("skip", skip, ndim=2)
        if tuple(skip.shape) != (t, hidden):
            raise ValueError(f"skip must be [{t}, {hidden}], got {tuple(skip.shape)}")
    if bias is not None:
        _checks.float_tensor("bias", bias, ndim=2)
        if bias.shape[1] != hidden:
            raise ValueError(f"bias must be [num_experts, {hidden}], got {tuple(bias.shape)}")


def check_grouped_matmul(x, weight, group_list) -> None:
    _checks.float_tensor("x", x, ndim=2)
    _checks.float_tensor("weight", weight, ndim=3)
    _checks.same_dtype("weight", weight, "x", x)
    _checks.index_tensor("group_list", group_list, ndim=1)
    _checks.same_device("weight", weight, "x", x)
    _checks.same_device("group_list", group_list, "x", x)
    if weight.shape[1] != x.shape[1]:
        raise ValueError(f"weight must be [E, {x.shape[1]}, N] to match x [M, K], got {tuple(weight.shape)}")
    if group_list.shape[0] != weight.shape[0]:
        raise ValueError(
            f"group_list needs one row count per expert ({weight.shape[0]}), got {group_list.shape[0]}"
        )


def check_grouped_matmul_swiglu(x, weight, group_list) -> None:
    check_grouped_matmul(x, weight, group_list)
    if weight.shape[2] % 2 or weight.shape[2] == 0:
        raise ValueError(f"weight must be [E, K, 2I] with I >= 1 (gate columns then up columns), "
                         f"got {'N = 0' if weight.shape[2] == 0 else f'an odd N = {weight.shape[2]}'}")


# ----------------------------------------------------------------------------- custom ops


def _gating_impl(
    router_logits: torch.Tensor,
    top_k: int,
    scoring: str,
    renormalize: bool,
    num_expert_group: int,
    topk_group: int,
    routed_scaling_factor: float,
    bias: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    return _MOE.pick("moe_gating_top_k", router_logits).moe_gating_top_k(
        router_logits, top_k, scoring, renormalize, num_expert_group, topk_group, routed_scaling_factor, bias
    )


_gating_op = torch.library.custom_op("ascend::moe_gating_top_k", mutates_args=())(_gating_impl)


@_gating_op.register_fake
def _(router_logits, top_k, scoring, renormalize, num_expert_group, topk_group, routed_scaling_factor, bias):
    t = router_logits.shape[0]
    return (
        router_logits.new_empty((t, top_k), dtype=torch.float32),
        router_logits.new_empty((t, top_k), dtype=torch.int32),
    )


def _init_impl(x: torch.Tensor, expert_idx: torch.Tensor,
               num_experts: int = -1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    # the NPU operator takes the expert count (expert_num); the CPU branches do not need it
    return _MOE.pick("moe_init_routing", x).moe_init_routing(x, expert_idx, num_experts)


_init_op = torch.library.custom_op("ascend::moe_init_routing", mutates_args=())(_init_impl)


@_init_op.register_fake
def _(x, expert_idx, num_experts=-1):
    n = expert_idx.shape[0] * expert_idx.shape[1]
    return (
        x.new_empty((n, x.shape[1])),
        x.new_empty((n,), dtype=torch.int32),
        x.new_empty((n,), dtype=torch.int32),
    )


def _finalize_impl(
    expanded_rows: torch.Tensor,
    scales: torch.Tensor,
    expanded_row_idx: torch.Tensor,
    expert_idx: torch.Tensor,
    skip: torch.Tensor | None,
    bias: torch.Tensor | None,
) -> torch.Tensor:
    return _MOE.pick("moe_finalize_routing", expanded_rows).moe_finalize_routing(
        expanded_rows, scales, expanded_row_idx, expert_idx, skip, bias)


_finalize_op = torch.library.custom_op("ascend::moe_finalize_routing", mutates_args=())(_finalize_impl)


@_finalize_op.register_fake
def _(expanded_rows, scales, expanded_row_idx, expert_idx, skip, bias):
    return expanded_rows.new_empty((scales.shape[0], expanded_rows.shape[1]))


def _run_grouped(name: str, x, weight, group_list, handle: int) -> torch.Tensor:
    """Body of the grouped-matmul custom ops: ``name`` on the selected backend; the handle (a
    CPU-only pack) goes to the native backend alone."""
    return getattr(_MOE.pick(name, x), name)(x, weight, group_list, handle)


def _gmm_impl(x: torch.Tensor, weight: torch.Tensor, group_list: torch.Tensor,
              handle: int) -> torch.Tensor:
    return _run_grouped("grouped_matmul", x, weight, group_list, handle)


_gmm_op = torch.library.custom_op("ascend::grouped_matmul", mutates_args=())(_gmm_impl)


@_gmm_op.register_fake
def _(x, weight, group_list, handle):
    return x.new_empty((x.shape[0], weight.shape[2]))


def _gmm_swiglu_impl(x: torch.Tensor, weight: torch.Tensor, group_list: torch.Tensor,
                     handle: int) -> torch.Tensor:
    return _run_grouped("grouped_matmul_swiglu", x, weight, group_list, handle)


_gmm_swiglu_op = torch.library.custom_op("ascend::grouped_matmul_swiglu", mutates_args=())(
    _gmm_swiglu_impl)


@_gmm_swiglu_op.register_fake
def _(x, weight, group_list, handle):
    return x.new_empty((x.shape[0], weight.shape[2] // 2))


# ----------------------------------------------------------------------------- public wrappers


def moe_gating_top_k(
    router_logits: torch.Tensor,
    top_k: int,
    *,
    scoring: str = "softmax",
    renormalize: bool = False,
    num_expert_group: int = 1,
    topk_group: int = 1,
    routed_scaling_factor: float = 1.0,
    bias: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pick ``top_k`` experts per token (vLLM ``GroupedTopk``; torch_npu ``npu_moe_gating_top_k``).

    Shapes: ``router_logits`` [T, E] float; ``bias`` (score correction, DeepSeek-V3) [E] or None.
    Returns (weights [T, top_k] float32, expert ids [T, top_k] int32), experts in descending
    choice score. ``scoring`` is ``"softmax"`` or ``"sigmoid"``; ``num_expert_group``/``topk_group``
    restrict the choice to the best groups (1/1 = no grouping); ``renormalize`` makes each token's
    weights sum to 1 before ``routed_scaling_factor`` multiplies them.
    Raises ValueError naming the argument for an unknown scoring function, top_k outside
    [1, selectable experts], groups that do not divide E, or a bias of the wrong length;
    TypeError for non-float logits.
    """
    check_gating(router_logits, top_k, scoring, num_expert_group, topk_group, bias)
    op = _gating_impl if eager_direct(*_present(router_logits, bias)) else torch.ops.ascend.moe_gating_top_k
    return op(
        router_logits, top_k, scoring, renormalize, num_expert_group, topk_group,
        float(routed_scaling_factor), bias,
    )


def moe_init_routing(x: torch.Tensor, expert_idx: torch.Tensor, num_experts: int = -1):
    """Permute tokens so each expert's rows are contiguous (torch_npu ``npu_moe_init_routing_v2``).

    Shapes: ``x`` [T, H] float, ``expert_idx`` [T, k] int32/int64 (ids >= 0, and
    < ``num_experts`` when given: the NPU operator's ``expert_num``; -1 = not known). Returns
    (expanded_x [T*k, H], expanded_row_idx [T*k] int32, expanded_expert_idx [T*k] int32):
    rows sorted by expert (ties in token order); ``expanded_row_idx[j*T + t]`` is the row that
    token t's j-th choice landed on (slot-major, torch_npu's convention). Count rows per expert
    on the device for ``grouped_matmul`` without a host sync, e.g.
    ``torch.zeros(E, dtype=torch.int64).scatter_add_(0, ids.long(), torch.ones_like(ids.long()))``
    (``torch.bincount`` reads min and max on the host on the NPU: op-plugin
    ``BincountKernelNpuOpApi.cpp``, see ``ascend_ops.simulator.host_sync_ops``).
    Raises TypeError/ValueError naming ``x`` or ``expert_idx`` for bad dtypes or shapes.
    """
    check_init_routing(x, expert_idx)
    if eager_direct(x, expert_idx):
        return _init_impl(x, expert_idx, int(num_experts))
    return torch.ops.ascend.moe_init_routing(x, expert_idx, int(num_experts))


def moe_finalize_routing(
    expanded_rows: torch.Tensor,
    scales: torch.Tensor,
    expanded_row_idx: torch.Tensor,
    expert_idx: torch.Tensor,
    *,
    skip: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
) -> torch.Tensor:
    """Un-permute expert outputs and sum them per token (torch_npu ``npu_moe_token_unpermute``,
    the NPU branch adding ``skip`` and ``bias`` with aten ops).

    Shapes: ``expanded_rows`` [T*k, H] (order of ``moe_init_routing``), ``scales`` [T, k] routing
    weights, ``expanded_row_idx`` [T*k], ``expert_idx`` [T, k], ``skip`` [T, H] added residual,
    ``bias`` [E, H] per-expert bias added before scaling. Returns [T, H] in ``expanded_rows.dtype``
    (float32 accumulation). Raises TypeError/ValueError naming the argument on bad shapes/dtypes.
    """
    check_finalize(expanded_rows, scales, expanded_row_idx, expert_idx, skip, bias)
    args = (expanded_rows, scales, expanded_row_idx, expert_idx, skip, bias)
    op = _finalize_impl if eager_direct(*_present(*args)) else torch.ops.ascend.moe_finalize_routing
    return op(*args)


def grouped_matmul(x: torch.Tensor, weight: torch.Tensor, group_list: torch.Tensor,
                   handle: int = -1) -> torch.Tensor:
    """Per-expert matmul over expert-contiguous rows (torch_npu ``npu_grouped_matmul``, counts).

    Shapes: ``x`` [M, K], ``weight`` [E, K, N] same float dtype, ``group_list`` [E] int row counts
    (sum <= M; rows past the sum come back as zeros on CPU, undefined on NPU). Returns [M, N].
    ``handle`` from :func:`pack_grouped_matmul_weight` selects the prepacked copy of ``weight`` on
    the native CPU backend (-1: none); the NPU branch and the reference ignore it.
    Raises TypeError/ValueError naming the argument on bad dtypes/shapes, ValueError for a
    handle packed from a weight of another shape.
    """
    check_grouped_matmul(x, weight, group_list)
    if eager_direct(x, weight, group_list):
        return _gmm_impl(x, weight, group_list, int(handle))
    return torch.ops.ascend.grouped_matmul(x, weight, group_list, int(handle))


def grouped_matmul_swiglu(x: torch.Tensor, weight: torch.Tensor, group_list: torch.Tensor,
                          handle: int = -1) -> torch.Tensor:
    """The first expert matmul of an MoE layer and its activation: ``swiglu(grouped_matmul(x,
    weight, group_list, handle))`` (torch_npu ``npu_grouped_matmul`` then ``npu_swiglu``).

    Shapes: ``x`` [M, K], ``weight`` [E, K, 2I] same float dtype (vLLM's ``w13_weight`` [E, 2I, K]
    transposed: gate columns [0, I), up columns [I, 2I)), ``group_list`` [E] int row counts.
    Returns [M, I]: ``gate * sigmoid(gate) * up`` of each row's product, the product rounded to
    x's dtype first, as the two ops give it. The native CPU backend runs both in one pass over the
    prepacked weight (``handle`` from :func:`pack_grouped_matmul_weight`, I a multiple of 32) and
    never writes the [M, 2I] product; otherwise, and on the NPU, the two ops run in turn. Raises
    what :func:`grouped_matmul` raises, and ValueError for an odd N.
    """
    check_grouped_matmul_swiglu(x, weight, group_list)
    if eager_direct(x, weight, group_list):
        return _gmm_swiglu_impl(x, weight, group_list, int(handle))
    return torch.ops.ascend.grouped_matmul_swiglu(x, weight, group_list, int(handle))


def pack_grouped_matmul_weight(weight: torch.Tensor) -> int:
    """Prepack expert weights ``weight`` [E, K, N] for the native CPU backend; return the handle.

    Returns -1 (no pack: ``grouped_matmul`` reads ``weight`` itself) unless ``weight`` is a 3-D
    CPU tensor of a dtype in ``native.moe.packed_dtypes()`` (float32, bfloat16, float16) and the
    native backend is the one that would run. The
    pack (``ascend_ops.native.moe``; one more copy of the weight bytes) is rebuilt on first use
    after ``weight`` is written in place or moved. Raises TypeError for a non-float ``weight``.
    """
    _checks.float_tensor("weight", weight)
    if weight.dim() != 3 or weight.device.type != "cpu" or weight.dtype not in _native_moe.packed_dtypes():
        return -1
    return _MOE.peek(weight).pack_grouped_matmul_weight(weight)


def release_grouped_matmul_weight(handle: int) -> None:
    """Free the packed copy behind ``handle`` (no-op for -1)."""
    _native_moe.release(int(handle))
