# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Torch stand-ins for vLLM's Triton input-preparation kernels (emulation mode).

Triton has no CPU backend on these machines (``HAS_TRITON`` is False), and vLLM's
own C++ fallbacks live in its CPU build only (the empty-target build installed here has no
compiled kernels). These are registered
through vLLM's override hook, ``vllm.triton_utils.dispatcher.register_kernels``; the model
runner also hands the slot-mapping one to its block tables directly
(:func:`direct_slot_mapping`), past vLLM's per-call launcher.
"""

from __future__ import annotations

import functools
from typing import Any

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
    on_host = (query_start_loc.device.type == "cpu" and positions.device.type == "cpu"
               and block_table.device.type == "cpu" and slot_mapping.device.type == "cpu")
    form = _slot_mapping_numpy if on_host else _slot_mapping_torch
    form(max_num_tokens, *tensors, block_table_stride, KV_CACHE_BLOCK_SIZE, PAD_ID)


# patch: block-table-direct-slot-mapping (declared in vllm_ascend_platform.patches.registry; docs/architecture.md)
def direct_slot_mapping(block_tables: Any) -> int:
    """Let each KV-cache group's ``BlockTable`` of ``block_tables`` (vLLM's
    ``MultiGroupBlockTable``, vllm/v1/worker/block_table.py) call :func:`compute_slot_mapping`
    directly, as an attribute of that instance (the class is untouched).

    ``BlockTable.compute_slot_mapping`` reaches the same function through vLLM's JIT-kernel
    launcher (``kernel_launcher``: ``inspect.Signature.bind`` of twelve arguments, launch-plan
    preparation, then the dispatcher's override), once per group per step on the runner's host
    path, where the launcher's own work is a large share of the call (benchmarks/README.md,
    "Design measurements behind the platform"). Groups that map no token slots (Mamba-like state caches) or split
    the KV cache across decode context-parallel ranks keep vLLM's method. Returns how many
    groups were switched.
    """
    from vllm.v1.attention.backends.utils import PAD_SLOT_ID
    from vllm.v1.worker.block_table import SlotMappingMode

    switched = 0
    for table in block_tables.block_tables:
        if table.slot_mapping_mode != SlotMappingMode.TOKEN_TO_KV_SLOT or table.dcp_world_size != 1:
            continue
        table.compute_slot_mapping = functools.partial(_table_slot_mapping, table, PAD_SLOT_ID)
        switched += 1
    return switched


def _table_slot_mapping(table: Any, pad_id: int, num_reqs: int, query_start_loc: torch.Tensor,
                        positions: torch.Tensor) -> None:
    """``BlockTable.compute_slot_mapping(num_reqs, query_start_loc, positions)`` for ``table``:
    the arguments vLLM's method hands its kernel, read from the table at call time (``pad_id``:
    vLLM's ``PAD_SLOT_ID``)."""
    block_table = table.block_table.gpu
    compute_slot_mapping(positions.shape[0], table.max_num_batched_tokens, query_start_loc,
                         positions, block_table, block_table.stride(0), table.slot_mapping.gpu,
                         table.block_size, table.dcp_world_size, table.dcp_rank,
                         table.cp_kv_cache_interleave_size, pad_id)


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
    step on the runner's host path (benchmarks/README.md, "Design measurements behind the
    platform")."""
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


def registered() -> bool:
    """True once :func:`register` has replaced vLLM's kernels in this process (on the host,
    without Triton: ``NPUPlatform.register_triton_kernel_overrides``); only then is a direct
    call (:func:`direct_slot_mapping`) the same computation as vLLM's launch."""
    return _registered


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

    from vllm_ascend_platform.host.spec_decode_kernels import KERNELS as SPEC_DECODE_KERNELS

    register_kernels(
        {"vllm.v1.worker.block_table.ComputeSlotMappingKernel.kernel": compute_slot_mapping,
         **SPEC_DECODE_KERNELS}
    )
