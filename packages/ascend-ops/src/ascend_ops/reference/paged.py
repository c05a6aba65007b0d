# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Pure-torch helpers of the paged KV layout that several backends share (no kernel of their own).

* Host lengths (``actual_seq_lengths`` / ``actual_seq_lengths_kv`` of FIA) and the
  ``query_start_loc`` / ``seq_lens`` tensors the CPU branches read: :func:`host_lengths`,
  :class:`StepLengths` (checks and builds them once per distinct value: every attention layer of
  a step passes the same lists).
* Dequantize-on-read of a cache stored in another dtype, for the blocks in use
  (:func:`read_cache`, CPU branches).
* MLA: prefill on the paged FIA through a scratch paged cache (:func:`paged_prefill`), and the
  context gather from the paged latent caches (:func:`gather_context`), which every backend runs
  as block-table index ops.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ascend_ops.checks import attention as attention_checks
from ascend_ops.reference import kv_quant
from ascend_ops.reference import mla as mla_reference

#: scratch-cache block size of mla_prefill (a FIA-supported paged block size)
PREFILL_BLOCK_SIZE = 128


def host_lengths(qsl, seq_lens, ends, kv_lens) -> tuple[list[int], list[int]]:
    """(ends, kv_lens) as host lists: the given ones, else read from the tensors (a
    device-to-host copy on NPU, illegal inside a graph capture)."""
    if ends is None:
        ends = [int(v) for v in qsl[1:].tolist()]
    if kv_lens is None:
        kv_lens = [int(v) for v in seq_lens.tolist()]
    return list(ends), list(kv_lens)


def cpu_lengths(device, ends, kv_lens) -> tuple[torch.Tensor, torch.Tensor]:
    """``query_start_loc`` / ``seq_lens`` tensors built from host lists (CPU branches)."""
    qsl = torch.tensor([0, *ends], dtype=torch.int32, device=device)
    return qsl, torch.tensor(kv_lens, dtype=torch.int32, device=device)


class StepLengths:
    """The last checked host lengths and the tensors built from them, for one owner.

    Every attention layer of a step passes the same lists, so the checks
    (``checks.attention.attention_lengths``) and the two small tensors are made once per step,
    not once per layer. Keyed by value (the lists are mutable) and by every shape the check
    reads. The owner keeps one instance and passes it to each call (the op layer of
    ``fused_infer_attention`` owns one, ``ops/attention.py``); a new instance starts empty.
    """

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: tuple | None = None

    def tensors(self, query, key_cache, block_table, num_requests, ends, kv_lens):
        """:func:`attention_lengths` then :func:`cpu_lengths`, memoized for one key."""
        key = (tuple(ends), tuple(kv_lens), query.shape[0], key_cache.shape[1],
               block_table.shape[1], num_requests, query.device)
        hit = self._last
        if hit is not None and hit[0] == key:
            return hit[1], hit[2]
        attention_checks.attention_lengths(query, key_cache, block_table, num_requests, ends,
                                           kv_lens)
        qsl, seq_lens = cpu_lengths(query.device, ends, kv_lens)
        self._last = (key, qsl, seq_lens)
        return qsl, seq_lens


def dequantized(query, key_cache, value_cache, block_table, seq_lens, k_scale, v_scale, kv_lens):
    """Dequantize-on-read for a cache stored in another dtype (CPU branches): the blocks the
    requests reference, read back in query's dtype (``reference/kv_quant.py``), as a compact
    cache with its own block table, so a step costs the blocks in use, not the whole cache.
    Raises ValueError naming ``block_table`` for a referenced block outside the cache."""
    bs, nb = key_cache.shape[1], key_cache.shape[0]
    lens = list(kv_lens) if kv_lens is not None else [int(v) for v in seq_lens.tolist()]
    rows = len(lens)
    need = torch.tensor([-(-kv // bs) for kv in lens], dtype=torch.long)
    cols = min(block_table.shape[1], max(1, int(need.max()) if rows else 1))
    table = block_table[:rows, :cols].long().cpu()
    wanted = torch.arange(cols).unsqueeze(0) < need.unsqueeze(1)
    if bool((wanted & ((table < 0) | (table >= nb))).any()):
        raise ValueError(f"block_table references a block outside [0, {nb}) (key_cache num_blocks)")
    used = torch.where(wanted, table, 0).reshape(-1).to(key_cache.device)
    kc = kv_quant.dequantize(key_cache.index_select(0, used), query.dtype, k_scale)
    vc = kv_quant.dequantize(value_cache.index_select(0, used), query.dtype, v_scale)
    compact = torch.arange(used.numel(), dtype=torch.int32, device=query.device)
    return kc, vc, compact.view(rows, cols)


def cpu_inputs(query, key_cache, value_cache, block_table, qsl, seq_lens, ends, kv_lens, k_scale,
               v_scale, step: StepLengths | None):
    """What the CPU branches of FIA read: (key_cache, value_cache, block_table) in query's dtype
    (:func:`dequantized` when stored narrower) and (query_start_loc, seq_lens) built from the
    host lengths when given (checked once per value through ``step``)."""
    if key_cache.dtype != query.dtype:
        key_cache, value_cache, block_table = dequantized(
            query, key_cache, value_cache, block_table, seq_lens, k_scale, v_scale, kv_lens)
    if ends is not None or kv_lens is not None:
        ends, kv_lens = host_lengths(qsl, seq_lens, ends, kv_lens)
        memo = step if step is not None else StepLengths()
        qsl, seq_lens = memo.tensors(query, key_cache, block_table, seq_lens.shape[0], ends,
                                     kv_lens)
    return key_cache, value_cache, block_table, qsl, seq_lens


# ---- MLA -------------------------------------------------------------------------------------
def _scratch_paged(key, value, kv_lens, block_size, write):
    """Per-request K/V rows -> scratch paged caches + block table (indices built on the host),
    written with ``write`` (the public ``reshape_and_cache``)."""
    kv = torch.tensor(kv_lens, dtype=torch.long)
    blocks = (kv + block_size - 1) // block_size
    first = torch.cumsum(blocks, 0) - blocks
    width = max(int(blocks.max()), 1) if len(kv_lens) else 1
    table = (first[:, None] + torch.arange(width)[None, :]).clamp(max=max(int(blocks.sum()) - 1, 0))
    req = torch.repeat_interleave(torch.arange(len(kv_lens)), kv)
    pos = torch.arange(int(kv.sum())) - (torch.cumsum(kv, 0) - kv)[req]
    slots = first[req] * block_size + pos
    shape = (max(int(blocks.sum()), 1), block_size, key.shape[1], key.shape[2])
    key_cache, value_cache = key.new_zeros(shape), key.new_zeros(shape)
    if value.shape[-1] != key.shape[-1]:  # FIA's paged K and V share one head dim: zero-pad V
        value = torch.nn.functional.pad(value, (0, key.shape[-1] - value.shape[-1]))
    write(key, value, key_cache, value_cache, slots.to(key.device))
    return key_cache, value_cache, table.to(device=key.device, dtype=torch.int32)


def paged_prefill(query, key, value, ends, kv_lens, scale, write: Callable, attend: Callable):
    """MLA prefill on the paged attention kernels: K/V written into a scratch paged cache with
    ``write`` (``reshape_and_cache``), causal ``attend`` (``fused_infer_attention``) over it with
    the host lengths, V's head dim cut back. No request: the reference. Raises ValueError when
    value's head dim exceeds key's (FIA's paged K and V share one head dim)."""
    if not ends:
        return mla_reference.mla_prefill(query, key, value, ends, kv_lens, scale)
    if value.shape[-1] > key.shape[-1]:
        raise ValueError(f"value head dim {value.shape[-1]} must be <= key head dim {key.shape[-1]}")
    key_cache, value_cache, table = _scratch_paged(key, value, kv_lens, PREFILL_BLOCK_SIZE, write)
    qsl = torch.tensor([0, *ends], dtype=torch.int32, device=query.device)
    seq = torch.tensor(kv_lens, dtype=torch.int32, device=query.device)
    out = attend(query.contiguous(), key_cache, value_cache, table, qsl, seq, scale, True,
                 actual_seq_lengths=ends, actual_seq_lengths_kv=kv_lens)
    return out[..., : value.shape[-1]].contiguous()


def gather_context(kv_c_cache, k_pe_cache, block_table, context_lens):
    """Rows 0..context_lens[b]-1 of every request b from the paged latent caches, concatenated
    (block-table index ops whose output size comes from the host list)."""
    lens = torch.tensor(context_lens, dtype=torch.long)
    total = int(lens.sum()) if len(context_lens) else 0
    block_size = kv_c_cache.shape[1]
    req = torch.repeat_interleave(torch.arange(len(context_lens)), lens)
    pos = torch.arange(total) - (torch.cumsum(lens, 0) - lens)[req]
    device = kv_c_cache.device
    req, pos = req.to(device), pos.to(device)
    slots = block_table[req, pos // block_size].long() * block_size + pos % block_size
    kv_c = kv_c_cache.reshape(-1, kv_c_cache.shape[-1]).index_select(0, slots)
    k_pe = k_pe_cache.reshape(-1, k_pe_cache.shape[-1]).index_select(0, slots)
    return kv_c, k_pe
