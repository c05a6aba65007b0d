# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""CPU emulation's versions of the per-step MRv2 stand-ins: numpy over host memory.

In CPU emulation (``VLLM_ASCEND_EMULATE=1``) vLLM 0.34's "device" tensors are host tensors and
there is no device to synchronise with, so a stand-in may read its arguments directly. These
functions compute exactly what their torch versions in
:mod:`vllm_ascend_platform.host.mrv2_kernels` compute (same arguments, same writes, same
returned tensors; ``tests/test_mrv2_kernels_np.py`` compares the two bit for bit), through
numpy views of the tensors (``Tensor.numpy()``, no copy), bounded by the step's real token
count (``query_start_loc[num_reqs]``) instead of the whole token buffer: the Model Runner V1
kept the same bookkeeping in numpy (``vllm/v1/worker/gpu_input_batch.py``), and small numpy
calls cost ~1 us against ~3-10 us per torch op on a [1..8]-row batch.

The torch versions stay the stand-ins on the simulated NPU, where reading device memory back
would be a host sync. :func:`emulation_kernels` gives the dispatcher entries: each calls the
numpy version when no torch dispatch mode is active, the torch version otherwise (a graph
capture or a tracing mode must see the aten ops).

Semantics per kernel: see the torch version's docstring (and vLLM's
``vllm/v1/worker/gpu/input_batch.py``, ``block_table.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from vllm_ascend_platform.host import mrv2_kernels as tk

_stack_len = torch._C._len_torch_dispatch_stack


def _np(t: torch.Tensor) -> np.ndarray:
    return t.numpy()


def _clip(a: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """``np.clip`` for integer arrays without its per-call dtype-limit lookups."""
    return np.minimum(np.maximum(a, lo), hi)


# ---- vllm/v1/worker/gpu/block_table.py -------------------------------------------------------

def _gather_block_tables(grid, batch_idx_to_req_idx, src_block_table_ptrs, dst_block_table_ptrs,
                         block_table_strides, num_blocks_ptr, num_blocks_stride, num_reqs,
                         num_computed_tokens_ptr, sliding_window_reach_ptr, block_sizes_ptr,
                         MASK_SLIDING_WINDOW=False, BLOCK_SIZE=None, **kw: Any) -> None:
    """``mrv2_kernels._gather_block_tables`` (sliding-window masking: the torch version)."""
    if MASK_SLIDING_WINDOW:
        return tk._gather_block_tables(
            grid, batch_idx_to_req_idx, src_block_table_ptrs, dst_block_table_ptrs,
            block_table_strides, num_blocks_ptr, num_blocks_stride, num_reqs,
            num_computed_tokens_ptr, sliding_window_reach_ptr, block_sizes_ptr,
            MASK_SLIDING_WINDOW=MASK_SLIDING_WINDOW, BLOCK_SIZE=BLOCK_SIZE, **kw)
    num_groups, num_rows = tk._grid(grid, 0), tk._grid(grid, 1)
    srcs = tk._tensors_at(src_block_table_ptrs)
    dsts = tk._tensors_at(dst_block_table_ptrs)
    req = _np(batch_idx_to_req_idx)[:num_reqs].tolist()
    num_blocks = _np(num_blocks_ptr)
    for g in range(num_groups):
        src, dst = _np(srcs[g]), _np(dsts[g])
        counts = num_blocks[g]
        for b, r in enumerate(req):
            c = int(counts[r])
            dst[b, :c] = src[r, :c]
        if num_rows > num_reqs:
            dst[num_reqs:num_rows] = 0


def _compute_slot_mappings(grid, max_num_tokens, idx_mapping, query_start_loc, pos,
                           block_table_ptrs, block_table_strides, block_sizes,
                           slot_mapping_enabled, dcp_sharded, slot_mappings_ptr,
                           slot_mappings_stride, cp_rank, CP_SIZE=1, CP_INTERLEAVE=1,
                           PAD_ID=-1, TRITON_BLOCK_SIZE=None, **_: Any) -> None:
    """``mrv2_kernels._compute_slot_mappings``."""
    if CP_SIZE != 1:
        raise NotImplementedError("MRv2 host kernels: context parallelism (_compute_slot_"
                                  "mappings_kernel with CP_SIZE > 1)")
    num_groups, num_reqs = tk._grid(grid, 0), tk._grid(grid, 1) - 1
    max_num_tokens = int(max_num_tokens)
    n = min(max_num_tokens, pos.shape[0])
    out_all = _np(slot_mappings_ptr)
    if num_reqs <= 0 or n <= 0:
        out_all[:num_groups, :max_num_tokens] = PAD_ID
        return
    qsl = _np(query_start_loc)[:num_reqs + 1]
    used = max(0, min(int(qsl[num_reqs]), n))  # tokens of the batch; the rest is PAD
    t = np.arange(used)
    b = np.searchsorted(qsl[1:], t, side="right")
    req = _np(idx_mapping)[:num_reqs].astype(np.int64)[b]
    real = req >= 0
    p = _np(pos)[:used].astype(np.int64)
    tables = tk._tensors_at(block_table_ptrs)
    sizes, enabled = _np(block_sizes), _np(slot_mapping_enabled)
    for g in range(num_groups):
        out = out_all[g]
        if enabled[g]:
            table = _np(tables[g])
            bs = int(sizes[g])
            numbers = table[np.maximum(req, 0), _clip(p // bs, 0, table.shape[1] - 1)]
            out[:used] = np.where(real, numbers.astype(np.int64) * bs + p % bs, PAD_ID)
            out[used:max_num_tokens] = PAD_ID
        else:
            out[:max_num_tokens] = PAD_ID


# ---- vllm/v1/worker/gpu/input_batch.py ---------------------------------------------------------

def prepare_pos_seq_lens(idx_mapping, query_start_loc, num_computed_tokens, pos,
                         seq_lens) -> None:
    """``mrv2_kernels.prepare_pos_seq_lens``."""
    num_reqs = idx_mapping.shape[0]
    sl = _np(seq_lens)
    if num_reqs == 0:
        sl[:] = 0
        return
    qsl = _np(query_start_loc)[:num_reqs + 1].astype(np.int64)
    done = _np(num_computed_tokens)[_np(idx_mapping)].astype(np.int64)
    sl[:num_reqs] = done + qsl[1:] - qsl[:-1]
    sl[num_reqs:] = 0
    p = _np(pos)
    used = max(0, min(int(qsl[num_reqs]), p.shape[0]))
    t = np.arange(used)
    b = np.searchsorted(qsl[1:], t, side="right")
    p[:used] = done[b] - qsl[b] + t


def combine_sampled_and_draft_tokens(input_ids, idx_mapping, last_sampled_tokens,
                                     query_start_loc, seq_lens, prefill_len, draft_tokens,
                                     cu_num_logits, num_logits, num_new_sampled_tokens=1):
    """``mrv2_kernels.combine_sampled_and_draft_tokens``."""
    n = idx_mapping.shape[0]
    if n == 0:
        return torch.empty(num_logits, dtype=torch.int64, device=input_ids.device)
    r = _np(idx_mapping).astype(np.int64)
    cu = _np(cu_num_logits)[:n + 1].astype(np.int64)
    query_end = _np(query_start_loc)[1:n + 1].astype(np.int64)
    i = np.arange(num_logits)
    b = np.minimum(np.searchsorted(cu[1:], i, side="right"), n - 1)
    logits_indices = query_end[b] - cu[1:][b] + i
    n_logits = cu[1:] - cu[:-1]
    seq_len = _np(seq_lens)[:n].astype(np.int64)
    plen = _np(prefill_len)[r].astype(np.int64)
    decoding = seq_len > plen
    ids = _np(input_ids)
    if num_new_sampled_tokens > 0:
        last = _np(last_sampled_tokens.reshape(-1))[r]
        put = decoding & (seq_len - n_logits >= plen)
        ids[_clip(query_end - n_logits, 0, ids.shape[0] - 1)[put]] = last[put]
    width = draft_tokens.shape[-1]
    if width:
        drafts = _np(draft_tokens)
        n_draft = n_logits - num_new_sampled_tokens
        for row in np.flatnonzero(decoding).tolist():
            k = min(int(n_draft[row]), width)
            if k > 0:
                end = int(query_end[row])
                ids[end - int(n_draft[row]):end - int(n_draft[row]) + k] = drafts[r[row], :k]
    return torch.from_numpy(logits_indices)


def get_num_sampled_and_rejected(num_sampled, seq_lens, cu_num_logits, idx_mapping,
                                 prefill_len):
    """``mrv2_kernels.get_num_sampled_and_rejected``."""
    n = idx_mapping.shape[0]
    ns = _np(num_sampled)
    chunked = _np(seq_lens)[:n] < _np(prefill_len)[_np(idx_mapping)]
    ns[chunked] = 0
    cu = _np(cu_num_logits)
    rejected = (cu[1:n + 1] - cu[:n]).astype(ns.dtype) - ns
    rejected[chunked] = 0
    return num_sampled, torch.from_numpy(rejected)


def post_update(idx_mapping, num_computed_tokens, last_sampled_tokens, output_bin_counts,
                sampled_tokens, num_sampled, num_rejected, query_start_loc, all_token_ids,
                total_len, draft_tokens=None, draft_tokens_out=None) -> None:
    """``mrv2_kernels.post_update``."""
    n = idx_mapping.shape[0]
    if n == 0:
        return
    idx = _np(idx_mapping).astype(np.int64)
    valid = idx >= 0
    k = _np(num_sampled)[:n].astype(np.int64)
    if draft_tokens is not None and draft_tokens.shape[1]:
        _np(draft_tokens_out)[idx[valid]] = _np(draft_tokens)[:n][valid]
    sampled = _np(sampled_tokens)[:n]
    width = sampled.shape[1]
    tl = _np(total_len)
    total = tl[np.maximum(idx, 0)].astype(np.int64)
    has = valid & (k > 0)
    last = sampled[np.arange(n), _clip(k - 1, 0, width - 1)]
    _np(last_sampled_tokens.view(-1))[idx[has]] = last[has]
    tl[idx[has]] = total[has] + k[has]
    ids = _np(all_token_ids)
    obc = None if output_bin_counts is None else _np(output_bin_counts)
    for b in np.flatnonzero(valid).tolist():
        kb = min(int(k[b]), width)
        if kb <= 0:
            continue
        row, start = int(idx[b]), int(total[b])
        cols = _clip(np.arange(start, start + kb), 0, ids.shape[1] - 1)
        ids[row, cols] = sampled[b, :kb]
        if obc is not None:
            tokens = _clip(sampled[b, :kb].astype(np.int64), 0, obc.shape[1] - 1)
            np.add.at(obc[row], tokens, 1)
    delta = -_np(num_rejected)[:n].astype(np.int64)
    if query_start_loc is not None:
        qsl = _np(query_start_loc).astype(np.int64)
        delta = delta + (qsl[1:n + 1] - qsl[:n])
    nct = _np(num_computed_tokens)
    np.add.at(nct, idx[valid], delta[valid].astype(nct.dtype))


# ---- registration --------------------------------------------------------------------------

def _either(numpy_fn: Callable[..., Any], torch_fn: Callable[..., Any]) -> Callable[..., Any]:
    """``numpy_fn`` when no torch dispatch mode is active, else ``torch_fn``."""

    @functools.wraps(numpy_fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if _stack_len():
            return torch_fn(*args, **kwargs)
        return numpy_fn(*args, **kwargs)

    return call


def emulation_kernels() -> dict[str, Any]:
    """Dispatcher entries (``mrv2_kernels.KERNELS`` keys) of the numpy versions."""
    g = tk.G
    return {
        f"{g}.block_table._gather_block_tables_kernel":
            tk.HostLaunch(_either(_gather_block_tables, tk._gather_block_tables)),
        f"{g}.block_table._compute_slot_mappings_kernel":
            tk.HostLaunch(_either(_compute_slot_mappings, tk._compute_slot_mappings)),
        f"{g}.input_batch.prepare_pos_seq_lens":
            _either(prepare_pos_seq_lens, tk.prepare_pos_seq_lens),
        f"{g}.input_batch.combine_sampled_and_draft_tokens":
            _either(combine_sampled_and_draft_tokens, tk.combine_sampled_and_draft_tokens),
        f"{g}.input_batch.get_num_sampled_and_rejected":
            _either(get_num_sampled_and_rejected, tk.get_num_sampled_and_rejected),
        f"{g}.input_batch.post_update": _either(post_update, tk.post_update),
    }
