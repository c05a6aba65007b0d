"""Paged KV-cache write op: ``torch.ops.ascend.reshape_and_cache``."""

from __future__ import annotations

import torch

from ascend_ops import _checks, _native, _npu, reference
from ascend_ops._dispatch import count, eager_direct, select_backend


def _reshape_and_cache_impl(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
) -> None:
    _checks.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping)
    backend = select_backend(key)
    count("reshape_and_cache", backend)
    if backend == "native":
        _native.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping)
        return
    _checks.slot_values(slot_mapping, key_cache)
    if backend == "npu":
        _npu.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping)
    else:
        reference.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping)


_reshape_and_cache_op = torch.library.custom_op(
    "ascend::reshape_and_cache", mutates_args=("key_cache", "value_cache")
)(_reshape_and_cache_impl)


@_reshape_and_cache_op.register_fake
def _(key, value, key_cache, value_cache, slot_mapping):
    _checks.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping)


def reshape_and_cache(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
) -> None:
    """Scatter this step's K/V into the paged cache, in place.

    Shapes: ``key``, ``value`` [T, Hk, D]; ``key_cache``, ``value_cache``
    [num_blocks, block_size, Hk, D], same dtype as key/value, may be non-contiguous views (e.g.
    the two halves of one [num_blocks, block_size, Hk, 2*D] buffer); ``slot_mapping`` int32/int64
    [T]. Token t goes to block slot // block_size, offset slot % block_size; slot < 0 is padding
    and is skipped.
    NPU: ATB ``torch_npu._npu_reshape_and_cache(key, value, key_cache, value_cache, slot_indices)``.
    Raises ValueError naming ``slot_mapping`` for a slot >= num_blocks * block_size (nothing is
    written), TypeError/ValueError naming the argument for dtype/shape mismatches.
    """
    if eager_direct(key, value, key_cache, value_cache, slot_mapping):
        _reshape_and_cache_impl(key, value, key_cache, value_cache, slot_mapping)
    else:
        torch.ops.ascend.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping)
