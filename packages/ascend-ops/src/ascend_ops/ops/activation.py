# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""SwiGLU op: ``torch.ops.ascend.swiglu``."""

from __future__ import annotations

import torch

from ascend_ops._dispatch import eager_direct
from ascend_ops.checks import layers as _checks
from ascend_ops.families import FAMILIES

_ACTIVATION = FAMILIES["activation"]


def _swiglu_impl(x: torch.Tensor) -> torch.Tensor:
    _checks.swiglu(x)
    return _ACTIVATION.pick("swiglu", x).swiglu(x)


_swiglu_op = torch.library.custom_op("ascend::swiglu", mutates_args=())(_swiglu_impl)


@_swiglu_op.register_fake
def _(x):
    _checks.swiglu(x)
    return x.new_empty((*x.shape[:-1], x.shape[-1] // 2))


def swiglu(x: torch.Tensor) -> torch.Tensor:
    """SwiGLU gate: silu(x[..., :I]) * x[..., I:] (vLLM ``SiluAndMul``).

    Shapes: ``x`` [..., 2I] float32/bfloat16/float16 -> [..., I] in ``x.dtype`` (float32 math).
    NPU: ``torch_npu.npu_swiglu(x, dim=-1)``.
    Raises TypeError for a non-float ``x``, ValueError when the last dim is odd.
    """
    if eager_direct(x):
        return _swiglu_impl(x)
    return torch.ops.ascend.swiglu(x)


silu_and_mul = swiglu
