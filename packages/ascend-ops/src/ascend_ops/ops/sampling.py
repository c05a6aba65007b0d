# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Greedy sampling op: ``torch.ops.ascend.greedy_argmax``.

The runner's sampler picks greedy tokens with it (vLLM's ``Sampler.greedy_sample``,
vllm/v1/sample/sampler.py, which calls ``logits.argmax(dim=-1)`` on a device and its own
``torch.ops._C.greedy_argmax`` kernel on vLLM's CPU platform). NPU branch: ``torch.argmax`` on
the NPU tensor (aclnnArgMaxV2); CPU: a C++ kernel (``csrc/sampling.cpp``) parallel over rows,
where ``aten.argmax`` over a [8, 49152] float32 batch runs on one thread.
"""

from __future__ import annotations

import torch

from ascend_ops._dispatch import eager_direct
from ascend_ops.checks import tensors as _checks
from ascend_ops.families import FAMILIES

_SAMPLING = FAMILIES["sampling"]


def _check(logits: torch.Tensor) -> None:
    _checks.float_tensor("logits", logits, 2)
    if logits.shape[1] == 0:
        raise ValueError(f"logits must have a vocab dim > 0, got shape {tuple(logits.shape)}")


def _greedy_argmax_impl(logits: torch.Tensor) -> torch.Tensor:
    _check(logits)
    return _SAMPLING.pick("greedy_argmax", logits).greedy_argmax(logits)


_greedy_argmax_op = torch.library.custom_op("ascend::greedy_argmax", mutates_args=())(
    _greedy_argmax_impl)


@_greedy_argmax_op.register_fake
def _(logits):
    _check(logits)
    return logits.new_empty((logits.shape[0],), dtype=torch.int64)


def greedy_argmax(logits: torch.Tensor) -> torch.Tensor:
    """Index of each row's largest logit: ``torch.argmax(logits, dim=-1)`` semantics (the first
    maximal index; NaN counts as the largest value).

    Shapes: ``logits`` [num_reqs, vocab] float32/bfloat16/float16 -> [num_reqs] int64.
    NPU: ``torch.argmax(logits, dim=-1)``.
    Raises TypeError for a non-float ``logits``, ValueError unless it is 2-D with vocab > 0.
    """
    if eager_direct(logits):
        return _greedy_argmax_impl(logits)
    return torch.ops.ascend.greedy_argmax(logits)
