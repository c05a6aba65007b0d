# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Ascend implementations of vLLM's IR ops ``rms_norm`` and ``fused_add_rms_norm``.

vLLM 0.32 routes ``RMSNorm`` (both its ``forward_native`` and, on an out-of-tree platform, its
default ``forward_oot``) through ``vllm.ir.ops.rms_norm`` / ``vllm.ir.ops.fused_add_rms_norm``.
Each IR op dispatches to the first provider in its priority list whose ``supports_args``
accepts the call. Importing this module registers provider ``"ascend"`` on both ops; it is the
module ``NPUPlatform.import_ir_kernels()`` imports, and :func:`vllm_ascend_models.default_ir_op_priority`
puts ``"ascend"`` first (followed by ``"native"`` for argument combinations we do not take).

Registering a provider changes nothing by itself: vLLM only dispatches to providers named in
``kernel_config.ir_op_priority``, which comes from the current platform's
``get_default_ir_op_priority`` (plus user overrides). So importing this module on another
platform is inert.

No ``from __future__ import annotations`` here: vLLM compares each implementation's schema
(``torch.library.infer_schema``) with the native one, which needs real annotations.
"""

import ascend_ops
import torch
from torch import Tensor

PROVIDER = "ascend"
"""Provider name of our IR-op implementations (``--ir-op-priority rms_norm=ascend,native``)."""


def _weight_or_ones(x: Tensor, weight: Tensor | None) -> Tensor:
    if weight is not None:
        return weight
    # vLLM passes weight=None for RMSNorm(has_weight=False): scaling by ones is the same math.
    return torch.ones(x.shape[-1], dtype=x.dtype, device=x.device)


def rms_norm_supports_args(
    x: Tensor, weight: Tensor | None, epsilon: float, variance_size: int | None = None
) -> bool:
    """True when ``ascend_ops.rms_norm`` computes exactly vLLM's ``rms_norm`` for these args.

    Not taken (next provider, normally ``native``): ``variance_size`` overrides (variance over
    a prefix of the hidden dim) and a weight whose dtype differs from ``x`` (vLLM rounds the
    normalized value to the weight dtype before scaling; our op scales in float32).
    """
    return variance_size is None and (weight is None or weight.dtype == x.dtype)


def fused_add_rms_norm_supports_args(
    x: Tensor,
    x_residual: Tensor,
    weight: Tensor | None,
    epsilon: float,
    variance_size: int | None = None,
) -> bool:
    """Same conditions as :func:`rms_norm_supports_args`, plus ``x_residual`` in ``x.dtype``."""
    return (
        variance_size is None
        and x_residual.dtype == x.dtype
        and (weight is None or weight.dtype == x.dtype)
    )


def rms_norm(
    x: Tensor, weight: Tensor | None, epsilon: float, variance_size: int | None = None
) -> Tensor:
    """vLLM IR ``rms_norm`` through ``ascend_ops.rms_norm`` (torch_npu ``npu_rms_norm``).

    Shapes: ``x`` [..., H]; ``weight`` [H] or None (no scaling). Returns [..., H] in ``x.dtype``,
    y = x / sqrt(mean(x^2, -1) + epsilon) * weight with float32 math (semantics:
    ``vllm/ir/ops/layernorm.py::rms_norm``). ``variance_size`` must be None (see
    :func:`rms_norm_supports_args`); ValueError otherwise.
    """
    if variance_size is not None:
        raise ValueError(
            f"variance_size={variance_size} is not supported by the ascend rms_norm provider; "
            "keep 'native' after 'ascend' in ir_op_priority.rms_norm so vLLM routes it there"
        )
    return ascend_ops.rms_norm(x, _weight_or_ones(x, weight), epsilon)


def fused_add_rms_norm(
    x: Tensor,
    x_residual: Tensor,
    weight: Tensor | None,
    epsilon: float,
    variance_size: int | None = None,
) -> tuple[Tensor, Tensor]:
    """vLLM IR ``fused_add_rms_norm`` through ``ascend_ops.add_rms_norm`` (``npu_add_rms_norm``).

    Shapes: ``x``, ``x_residual`` [..., H] same dtype; ``weight`` [H] or None.
    Returns ``(out, residual)``: residual = x + x_residual in ``x.dtype``, out = rms_norm(residual)
    (semantics: ``vllm/ir/ops/layernorm.py::fused_add_rms_norm``). Out of place: registered with
    ``inplace=False``, so vLLM's ``maybe_inplace`` overload simply uses the returned tensors.
    ``variance_size`` must be None; ValueError otherwise.
    """
    if variance_size is not None:
        raise ValueError(
            f"variance_size={variance_size} is not supported by the ascend fused_add_rms_norm "
            "provider; keep 'native' after 'ascend' in ir_op_priority.fused_add_rms_norm"
        )
    return ascend_ops.add_rms_norm(x, x_residual, _weight_or_ones(x, weight), epsilon)


def register_ir_kernels() -> None:
    """Register provider ``"ascend"`` on vLLM's ``rms_norm`` and ``fused_add_rms_norm`` IR ops.

    Idempotent (vLLM asserts on a duplicate provider, so an existing one is left alone).
    """
    from vllm import ir

    if PROVIDER not in ir.ops.rms_norm.impls:
        ir.ops.rms_norm.register_impl(
            PROVIDER, supported=True, supports_args=rms_norm_supports_args
        )(rms_norm)
    if PROVIDER not in ir.ops.fused_add_rms_norm.impls:
        ir.ops.fused_add_rms_norm.register_impl(
            PROVIDER, supported=True, supports_args=fused_add_rms_norm_supports_args
        )(fused_add_rms_norm)


register_ir_kernels()
