# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Host (torch) stand-ins for the Triton kernels vLLM 0.34's Model Runner V2 launches per step.

PROTOTYPE (branch vllm-034; docs/model-runner-v2.md is the plan). vLLM 0.34 removed Model Runner
V1; its MRv2 runner (``vllm/v1/worker/gpu/model_runner.py``) prepares inputs, keeps per-request
state and samples through Triton kernels. Triton has no backend on our host modes (CPU
emulation, simulated NPU: ``HAS_TRITON`` is False), and the C++ kernels behind vLLM's own
no-Triton CPU runner (``vllm/v1/worker/cpu/``, ``vllm._cpu_ops``) are absent from the
empty-target build. These functions replace them through vLLM's hook,
``vllm.triton_utils.dispatcher.register_kernels``, called from
``Platform.register_triton_kernel_overrides`` (``vllm/v1/worker/worker_base.py`` runs it before
the runner exists).

Two granularities, both through the dispatcher (docs/model-runner-v2.md, "Kernel table"):

* **wrapper level** where vLLM launches the kernel from a module-level function
  (``prepare_pos_seq_lens`` ...): the function itself is replaced. Several of these wrappers call
  ``triton.next_power_of_2``, which vLLM's Triton placeholder lacks, so a kernel-level override
  would never be reached. The dispatcher wraps a plain callable in ``KernelOverride`` and rebinds
  every module attribute that held the original (``from ... import`` copies in model_runner.py).
* **kernel level** where the launch sits in a method (``BlockTables``, ``StagedWriteTensor``):
  a :class:`HostLaunch` receives the caller's grid (``kernel[grid](...)``) and the kernel's
  arguments. ``_gather_block_tables_kernel``/``_compute_slot_mappings_kernel`` take *pointer
  tables* (uint64 ``data_ptr`` values of each KV-cache group's block table); on the host the
  runner registers those tensors (:func:`register_pointers`) and the stand-ins look them up.

Speculative decoding's stand-ins (EAGLE/EAGLE-3/MTP draft inputs, verification) are in
:mod:`vllm_ascend_platform.host.mrv2_spec_decode`, registered together with these. Per-request
``logprob_token_ids``: :mod:`vllm_ascend_platform.host.mrv2_logprobs`. Not covered yet (raise
NotImplementedError when reached, naming the kernel): NaN metrics, sampling masks, thinking
budget, watermarking and context parallelism.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from vllm_ascend_platform.host.mrv2_launch import one_launch

_MASK32 = 0xFFFFFFFF

# ---- pointer tables (block tables) ----------------------------------------------------------

_POINTERS: dict[int, torch.Tensor] = {}
_GENERATION = 0  # bumped by every registration: cached pointer-table reads are checked against it


def register_pointers(tensors: list[torch.Tensor]) -> None:
    """Make ``tensors`` findable by their ``data_ptr()`` (the values vLLM's ``BlockTables``
    packs into ``block_table_ptrs``/``input_block_table_ptrs``, ``_make_ptr_tensor``)."""
    global _GENERATION
    for t in tensors:
        _POINTERS[t.data_ptr()] = t
    _GENERATION += 1


def _tensor_at(ptr: int) -> torch.Tensor:
    try:
        return _POINTERS[ptr]
    except KeyError:
        raise RuntimeError(
            f"vllm-ascend MRv2 host kernels: no tensor registered at 0x{ptr:x}; the runner "
            "registers its block tables after initialize_kv_cache (register_pointers)") from None


def _host_tensor_at(ptr: int, count: int, dtype: torch.dtype) -> torch.Tensor:
    """The ``count`` elements of ``dtype`` at host address ``ptr``, shared (no copy): a
    registered tensor when there is one, else a view of that memory. Only for the host modes,
    where vLLM's "device" tensors are host memory; the caller keeps the owner alive (vLLM's
    ``PromptEmbedsState.gpu_tensors`` holds the tensors its pointer tables name)."""
    if ptr in _POINTERS:
        return _POINTERS[ptr].reshape(-1).view(dtype)[:count]
    import ctypes

    nbytes = count * torch.empty((), dtype=dtype).element_size()
    return torch.frombuffer((ctypes.c_byte * nbytes).from_address(ptr), dtype=dtype, count=count)


def _tensors_at(ptrs: torch.Tensor) -> list[torch.Tensor]:
    """The registered tensors a uint64 pointer table names. The table is read once and the
    answer kept on the table tensor itself, keyed by its version counter (bumped by any
    in-place write) and the registry generation: vLLM builds these tables once per KV-cache
    initialisation, so a step reads no device memory for them."""
    key = (ptrs._version, _GENERATION)
    cached = getattr(ptrs, "_ascend_host_tensors", None)
    if cached is not None and cached[0] == key:
        return cached[1]
    # uint64 on the host: read through int64 (same bits; addresses are < 2**63)
    found = [_tensor_at(int(p)) for p in ptrs.view(torch.int64).tolist()]
    ptrs._ascend_host_tensors = (key, found)
    return found


def _kernel(name: str, *writes: str, grid: bool = False) -> Callable[[Callable[..., Any]],
                                                                      Callable[..., Any]]:
    """The stand-in of the kernel ``name`` (writing the arguments ``writes``) as one device op on
    the simulated NPU (:func:`~vllm_ascend_platform.host.mrv2_launch.one_launch`); ``grid``:
    a ``HostLaunch`` function (first parameter the grid)."""
    return one_launch(name, writes, _tensors_at, skip_grid=grid)


class HostLaunch:
    """Stands in for ``kernel[grid](*args, **kwargs)``: ``fn(grid, *args, **kwargs)``.

    Not a Triton kernel and not callable, so ``register_kernels`` wraps it in
    ``KernelOverride``, whose ``__getitem__`` hands the caller's grid to ours."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.__name__ = fn.__name__

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return functools.partial(self.fn, grid)


def _grid(grid: Any, dim: int) -> int:
    grid = grid if isinstance(grid, tuple) else (grid,)
    return int(grid[dim]) if dim < len(grid) else 1


# ---- helpers shared by the step kernels -------------------------------------------------------
#
# The stand-ins below never read a device value back to the host (no ``int(t)``, ``.tolist()``,
# ``bool(t)``, ``nonzero``, boolean-mask indexing or ``repeat_interleave`` without
# ``output_size``): on the simulated NPU each would be a host sync, and none is needed. Their
# loops are over Python ints the caller already holds (grid sizes, ``.shape``). Token-level work
# runs over the whole token buffer, whose length is known without a read; each token finds its
# batch row in ``query_start_loc`` with ``searchsorted``, and rows past the batch are masked.


def _token_rows(query_start_loc: torch.Tensor, num_reqs: int,
                num_tokens: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For token slots ``0..num_tokens-1`` of a batch of ``num_reqs`` (> 0) requests: the slot
    index ``t`` [num_tokens] int64, the batch row owning it (``qsl[b] <= t < qsl[b + 1]``,
    clamped to the last row for slots past the batch) and whether it is inside the batch."""
    t = torch.arange(num_tokens, dtype=torch.int64, device=query_start_loc.device)
    b = torch.searchsorted(query_start_loc[1:num_reqs + 1], t, right=True)
    inside = b < num_reqs
    return t, b.clamp_max(num_reqs - 1), inside


def _masked_assign(target: torch.Tensor, index: tuple[torch.Tensor, ...], values: torch.Tensor,
                   mask: torch.Tensor) -> None:
    """``target[index] = values`` where ``mask``, without selecting the masked entries (which
    would read the mask back): the masked-out entries add 0 through an accumulating put.
    Their indices must be in range (clamp them); the kept ones must be distinct, as the
    kernels' stores are."""
    delta = values.to(target.dtype) - target[index]
    target.index_put_(index, torch.where(mask, delta, torch.zeros_like(delta)), accumulate=True)


# ---- vllm/v1/worker/gpu/buffer_utils.py ------------------------------------------------------

@_kernel("_apply_write_kernel", "output_ptr", grid=True)
def _apply_write(grid, output_ptr, output_stride, write_indices_ptr, write_starts_ptr,
                 write_contents_ptr, write_cu_lens_ptr, write_group_ids_ptr, BLOCK_SIZE=None,
                 MULTI_GROUP=False, **_: Any) -> None:
    """``_apply_write_kernel``: write ``n`` staged slices, slice ``i`` = contents
    ``[cu[i-1], cu[i])`` into row ``indices[i]`` from column ``starts[i]`` (the kernel's
    addressing: base + row * row_stride + start; 1-D targets have stride 1). ``contents``
    holds exactly ``cu[n-1]`` elements (``StagedWriteTensor.apply_write`` and
    ``FusedStagedWriter.apply`` copy exactly the staged length), so every element is written."""
    n = _grid(grid, 0)
    num_elems = write_contents_ptr.shape[0]
    if n == 0 or num_elems == 0:
        return
    dev = write_contents_ptr.device
    cu = write_cu_lens_ptr[:n].to(torch.int64)
    e = torch.arange(num_elems, dtype=torch.int64, device=dev)
    i = torch.searchsorted(cu, e, right=True).clamp_max(n - 1)  # slice of each element
    first = torch.cat([cu.new_zeros(1), cu[:-1]])[i]
    col = write_starts_ptr[:n].to(torch.int64)[i] + (e - first)
    row = write_indices_ptr[:n].to(torch.int64)[i]
    contents = write_contents_ptr[:num_elems]
    if not MULTI_GROUP:
        out = output_ptr.view(-1)
        out.index_put_((row * int(output_stride) + col,), contents.to(out.dtype))
        return
    outputs = _tensors_at(output_ptr)
    group = write_group_ids_ptr[:n].to(torch.int64)[i]
    strides = output_stride.to(torch.int64)
    at = row * strides[group] + col
    for g, out in enumerate(outputs):
        flat = out.view(-1)
        _masked_assign(flat, (at.clamp(0, flat.numel() - 1),), contents, group == g)


# ---- vllm/v1/worker/gpu/block_table.py -------------------------------------------------------

@_kernel("_gather_block_tables_kernel", "dst_block_table_ptrs", grid=True)
def _gather_block_tables(grid, batch_idx_to_req_idx, src_block_table_ptrs, dst_block_table_ptrs,
                         block_table_strides, num_blocks_ptr, num_blocks_stride, num_reqs,
                         num_computed_tokens_ptr, sliding_window_reach_ptr, block_sizes_ptr,
                         MASK_SLIDING_WINDOW=False, BLOCK_SIZE=None, **_: Any) -> None:
    """``_gather_block_tables_kernel``: dst row b = src row idx[b] (its first num_blocks
    entries; sliding-window groups null the blocks below the window); rows ``num_reqs..`` of
    the grid are zeroed."""
    num_groups, num_rows = _grid(grid, 0), _grid(grid, 1)
    srcs = _tensors_at(src_block_table_ptrs)
    dsts = _tensors_at(dst_block_table_ptrs)
    req = batch_idx_to_req_idx[:num_reqs].to(torch.int64)
    for g in range(num_groups):
        src, dst = srcs[g], dsts[g]
        if num_reqs > 0:
            counts = num_blocks_ptr[g, req].to(torch.int64)
            rows = src[req]
            cols = torch.arange(src.shape[1], device=src.device)
            if MASK_SLIDING_WINDOW:
                reach = sliding_window_reach_ptr[g].to(torch.int64)
                first = num_computed_tokens_ptr[req].to(torch.int64)
                num_null = (first - reach).clamp_min(0) // block_sizes_ptr[g].to(torch.int64)
                num_null = torch.where(reach > 0, num_null, torch.zeros_like(num_null))
                rows = torch.where(cols[None, :] >= num_null[:, None], rows, torch.zeros_like(rows))
            dst[:num_reqs] = torch.where(cols[None, :] < counts[:, None], rows, dst[:num_reqs])
        if num_rows > num_reqs:
            dst[num_reqs:num_rows] = 0


@_kernel("_compute_slot_mappings_kernel", "slot_mappings_ptr", grid=True)
def _compute_slot_mappings(grid, max_num_tokens, idx_mapping, query_start_loc, pos,
                           block_table_ptrs, block_table_strides, block_sizes,
                           slot_mapping_enabled, dcp_sharded, slot_mappings_ptr,
                           slot_mappings_stride, cp_rank, CP_SIZE=1, CP_INTERLEAVE=1,
                           PAD_ID=-1, TRITON_BLOCK_SIZE=None, **_: Any) -> None:
    """``_compute_slot_mappings_kernel``: slot = block_table[req, pos // B] * B + pos % B per
    token and group; PAD_ID for dummy requests (idx -1), disabled groups and tokens past the
    batch up to ``max_num_tokens``."""
    if CP_SIZE != 1:
        raise NotImplementedError("MRv2 host kernels: context parallelism (_compute_slot_"
                                  "mappings_kernel with CP_SIZE > 1)")
    num_groups, num_reqs = _grid(grid, 0), _grid(grid, 1) - 1
    # token slots the batch can occupy: no more than ``pos`` holds (the tail is PAD)
    n = min(int(max_num_tokens), pos.shape[0])
    if num_reqs > 0 and n > 0:
        tables = _tensors_at(block_table_ptrs)
        _, b, inside = _token_rows(query_start_loc, num_reqs, n)
        req = idx_mapping[:num_reqs].to(torch.int64)[b]
        real = inside & (req >= 0)
        p = pos[:n].to(torch.int64)
    for g in range(num_groups):
        out = slot_mappings_ptr[g]
        if num_reqs > 0 and n > 0:
            table = tables[g]
            bs = block_sizes[g].to(torch.int64)
            enabled = slot_mapping_enabled[g]
            block_idx = torch.where(enabled, p // bs, torch.zeros_like(p))
            numbers = table[req.clamp_min(0), block_idx.clamp(0, table.shape[1] - 1)]
            slots = numbers.to(torch.int64) * bs + p % bs
            out[:n] = torch.where(real & enabled, slots, PAD_ID)
            out[n:max_num_tokens] = PAD_ID
        else:
            out[:max_num_tokens] = PAD_ID


# ---- vllm/v1/worker/gpu/input_batch.py (wrapper level) ---------------------------------------

@_kernel("_prepare_prefill_inputs_kernel", "input_ids", "next_prefill_tokens")
def prepare_prefill_inputs(input_ids, next_prefill_tokens, idx_mapping, query_start_loc,
                           all_token_ids, prefill_len, num_computed_tokens) -> None:
    """``prepare_prefill_inputs``: for each prefilling request (computed < prefill length),
    copy its scheduled prompt tokens into ``input_ids`` and the next ``num_lookahead`` prompt
    tokens (0 past the prompt) into column ``req`` of ``next_prefill_tokens``."""
    n = idx_mapping.shape[0]
    if n == 0:
        return
    width = all_token_ids.shape[1]
    r = idx_mapping.to(torch.int64)
    plen = prefill_len[r].to(torch.int64)
    done = num_computed_tokens[r].to(torch.int64)
    prefilling = done < plen
    qsl = query_start_loc[: n + 1].to(torch.int64)
    t, b, inside = _token_rows(qsl, n, input_ids.shape[0])
    col = (done[b] + t - qsl[b]).clamp(0, width - 1)
    tokens = all_token_ids[r[b], col].to(input_ids.dtype)
    input_ids.copy_(torch.where(inside & prefilling[b], tokens, input_ids))
    num_lookahead = next_prefill_tokens.shape[0]
    if num_lookahead:
        ahead = (done + qsl[1:] - qsl[:-1])[None, :] + torch.arange(
            num_lookahead, dtype=torch.int64, device=r.device)[:, None]  # [lookahead, n]
        vals = all_token_ids[r[None, :], ahead.clamp(0, width - 1)]
        vals = torch.where(ahead < plen[None, :], vals, torch.zeros_like(vals))
        rows = torch.arange(num_lookahead, device=r.device)[:, None].expand(-1, n)
        _masked_assign(next_prefill_tokens, (rows, r[None, :].expand(num_lookahead, -1)), vals,
                       prefilling[None, :].expand(num_lookahead, -1))


@_kernel("_prepare_pos_seq_lens_kernel", "pos", "seq_lens")
def prepare_pos_seq_lens(idx_mapping, query_start_loc, num_computed_tokens, pos,
                         seq_lens) -> None:
    """``prepare_pos_seq_lens``: positions ``done..done+query_len`` per request, seq_lens =
    done + query_len, seq_lens past the batch zeroed (full-graph padding)."""
    num_reqs = idx_mapping.shape[0]
    qsl = query_start_loc[: num_reqs + 1].to(torch.int64)
    done = num_computed_tokens[idx_mapping.to(torch.int64)].to(torch.int64)
    seq_lens[:num_reqs] = (done + qsl[1:] - qsl[:-1]).to(seq_lens.dtype)
    seq_lens[num_reqs:] = 0
    if num_reqs:
        t, b, inside = _token_rows(qsl, num_reqs, pos.shape[0])
        pos.copy_(torch.where(inside, (done[b] - qsl[b] + t).to(pos.dtype), pos))


@_kernel("_combine_sampled_and_draft_tokens_kernel", "input_ids")
def combine_sampled_and_draft_tokens(input_ids, idx_mapping, last_sampled_tokens,
                                     query_start_loc, seq_lens, prefill_len, draft_tokens,
                                     cu_num_logits, num_logits, num_new_sampled_tokens=1):
    """``combine_sampled_and_draft_tokens``: logits indices = the last ``num_logits`` query
    rows of each request; decoding requests (seq_len > prefill_len) get their last sampled
    token (when its position is past the prompt) and their drafts written into ``input_ids``."""
    n = idx_mapping.shape[0]
    dev = input_ids.device
    if n == 0:
        return torch.empty(num_logits, dtype=torch.int64, device=dev)
    r = idx_mapping.to(torch.int64)
    cu = cu_num_logits[: n + 1].to(torch.int64)
    query_end = query_start_loc[1:n + 1].to(torch.int64)
    # logits row i of request b: query_end[b] - (cu[b + 1] - i)
    i = torch.arange(num_logits, dtype=torch.int64, device=dev)
    b = torch.searchsorted(cu[1:], i, right=True).clamp_max(n - 1)
    logits_indices = query_end[b] - cu[1:][b] + i
    n_logits = cu[1:] - cu[:-1]
    seq_len = seq_lens[:n].to(torch.int64)
    plen = prefill_len[r].to(torch.int64)
    decoding = seq_len > plen
    if num_new_sampled_tokens > 0:
        start = (query_end - n_logits).clamp(0, input_ids.shape[0] - 1)
        # [max_num_reqs, 1] in vLLM 0.34 (states.py): the kernel addresses it flat
        _masked_assign(input_ids, (start,), last_sampled_tokens.reshape(-1)[r],
                       decoding & (seq_len - n_logits >= plen))
    width = draft_tokens.shape[-1]
    if width:
        n_draft = n_logits - num_new_sampled_tokens
        j = torch.arange(width, dtype=torch.int64, device=dev)
        at = (query_end - n_draft)[:, None] + j[None, :]
        _masked_assign(input_ids, (at.clamp(0, input_ids.shape[0] - 1),), draft_tokens[r],
                       decoding[:, None] & (j[None, :] < n_draft[:, None]))
    return logits_indices


@_kernel("_get_num_sampled_and_rejected_kernel", "num_sampled")
def get_num_sampled_and_rejected(num_sampled, seq_lens, cu_num_logits, idx_mapping,
                                 prefill_len):
    """``get_num_sampled_and_rejected``: chunked-prefill rows sample nothing; rejected =
    logits - sampled."""
    n = idx_mapping.shape[0]
    chunked = seq_lens[:n] < prefill_len[idx_mapping.to(torch.int64)]
    num_sampled.masked_fill_(chunked, 0)
    num_rejected = (cu_num_logits[1:n + 1] - cu_num_logits[:n]).to(num_sampled.dtype) - num_sampled
    num_rejected.masked_fill_(chunked, 0)
    return num_sampled, num_rejected


@_kernel("_post_update_kernel", "num_computed_tokens", "last_sampled_tokens",
         "output_bin_counts", "all_token_ids", "total_len", "draft_tokens_out")
def post_update(idx_mapping, num_computed_tokens, last_sampled_tokens, output_bin_counts,
                sampled_tokens, num_sampled, num_rejected, query_start_loc, all_token_ids,
                total_len, draft_tokens=None, draft_tokens_out=None) -> None:
    """``post_update``: after sampling, per request (idx >= 0): keep drafts, append the sampled
    tokens to ``all_token_ids``, set the last sampled token, count output tokens for penalties,
    advance ``num_computed_tokens`` by query_len - rejected. Rows with idx < 0 change nothing
    (their updates add 0)."""
    n = idx_mapping.shape[0]
    if n == 0:
        return
    idx = idx_mapping.to(torch.int64)
    valid = idx >= 0
    r = idx.clamp_min(0)
    k = num_sampled[:n].to(torch.int64)
    if draft_tokens is not None and draft_tokens.shape[1]:
        _masked_assign(draft_tokens_out, (r,), draft_tokens[:n], valid[:, None])
    width = sampled_tokens.shape[1]
    total = total_len[r].to(torch.int64)
    has = valid & (k > 0)
    last = sampled_tokens[:n].gather(1, (k - 1).clamp(0, width - 1)[:, None])[:, 0]
    # [max_num_reqs, 1] in vLLM 0.34 (states.py, contiguous): the kernel addresses it flat
    _masked_assign(last_sampled_tokens.view(-1), (r,), last, has)
    _masked_assign(total_len, (r,), total + k, has)
    j = torch.arange(width, dtype=torch.int64, device=idx.device)
    cell = valid[:, None] & (j[None, :] < k[:, None])  # [n, width]: tokens sampled this step
    rows = r[:, None].expand(-1, width)
    cols = (total[:, None] + j[None, :]).clamp(0, all_token_ids.shape[1] - 1)
    _masked_assign(all_token_ids, (rows, cols), sampled_tokens[:n], cell)
    if output_bin_counts is not None:
        tokens = sampled_tokens[:n].to(torch.int64).clamp(0, output_bin_counts.shape[1] - 1)
        output_bin_counts.index_put_((rows, tokens), cell.to(output_bin_counts.dtype),
                                     accumulate=True)
    delta = -num_rejected[:n].to(torch.int64)
    if query_start_loc is not None:
        delta = delta + (query_start_loc[1:n + 1] - query_start_loc[:n]).to(torch.int64)
    num_computed_tokens.index_add_(
        0, r, torch.where(valid, delta, torch.zeros_like(delta)).to(num_computed_tokens.dtype))


@_kernel("_post_update_num_computed_tokens_kernel", "num_computed_tokens")
def post_update_num_computed_tokens(idx_mapping, num_computed_tokens, query_start_loc) -> None:
    """``post_update_num_computed_tokens``: add each request's query length."""
    n = idx_mapping.shape[0]
    lens = (query_start_loc[1:n + 1] - query_start_loc[:n]).to(num_computed_tokens.dtype)
    num_computed_tokens.index_add_(0, idx_mapping.to(torch.int64), lens)


def expand_idx_mapping(idx_mapping, total_num_logits, cu_num_logits, max_expand_len):
    """``expand_idx_mapping``: one entry per logit row: its request state index and its
    position within the request's rows."""
    n = idx_mapping.shape[0]
    counts = (cu_num_logits[1:n + 1] - cu_num_logits[:n]).to(torch.int64)
    expanded = torch.repeat_interleave(idx_mapping, counts)
    starts = torch.repeat_interleave(cu_num_logits[:n].to(torch.int64), counts)
    local = (torch.arange(int(counts.sum())) - starts).to(torch.int32)
    out = idx_mapping.new_empty(total_num_logits)
    out[: expanded.numel()] = expanded
    local_out = torch.empty(total_num_logits, dtype=torch.int32)
    local_out[: local.numel()] = local
    return out, local_out


# ---- vllm/v1/worker/gpu/sample/gumbel.py ------------------------------------------------------

def _rotl32(v: torch.Tensor, s: int) -> torch.Tensor:
    return ((v << s) | (v >> (32 - s))) & _MASK32


def _mix(h: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
    key = (key * 0xCC9E2D51) & _MASK32
    key = _rotl32(key, 15)
    key = (key * 0x1B873593) & _MASK32
    h = h ^ key
    h = _rotl32(h, 13)
    return (h * 5 + 0xE6546B64) & _MASK32


def _fmix(h: torch.Tensor) -> torch.Tensor:
    h = h ^ (h >> 16)
    h = (h * 0x85EBCA6B) & _MASK32
    h = h ^ (h >> 13)
    h = (h * 0xC2B2AE35) & _MASK32
    return h ^ (h >> 16)


def _murmur3_hash32(seed: torch.Tensor, pos: torch.Tensor, offset: torch.Tensor,
                    domain: int = 0) -> torch.Tensor:
    """vLLM's ``murmur3_hash32`` (vllm/v1/worker/gpu/sample/gumbel.py) in int64 torch ops:
    uint32 values held in int64."""
    h = torch.full((), domain, dtype=torch.int64)
    h = _mix(h, seed & _MASK32)
    h = _mix(h, (seed >> 32) & _MASK32)
    h = _mix(h, pos & _MASK32)
    h = _mix(h, offset & _MASK32)
    return _fmix(h ^ 16)


def murmur3_uniform32(seed: torch.Tensor, pos: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
    """vLLM's counter-based uniform (``murmur3_uniform32``, vllm/v1/worker/gpu/sample/gumbel.py)
    in int64 torch ops: ``seed``/``pos`` [rows, 1], ``offset`` (token ids) [vocab]; fp32 in
    (0, 1), the same 32-bit hash the Triton kernel draws, so seeded sampling can match it."""
    r = _murmur3_hash32(seed, pos, offset)
    hi, lo = (r >> 16).to(torch.float32), (r & 0xFFFF).to(torch.float32)
    return hi * 1.52587890625e-05 + (lo + 0.5) * 2.3283064365386963e-10


def murmur3_uniform64(seed: torch.Tensor, pos: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
    """vLLM's ``murmur3_uniform64``: 53 bits from two domain-separated hashes, fp64 in (0, 1)."""
    lo = _murmur3_hash32(seed, pos, offset)
    hi = _murmur3_hash32(seed, pos, offset, domain=0x9E3779B9)
    random53 = (hi << 21) | (lo >> 11)  # ((hi << 32) | lo) >> 11 without leaving int64
    u = (random53.to(torch.float64) + 0.5) * 1.1102230246251565e-16
    return torch.where(u == 1.0, u - 1.1102230246251565e-16, u)


def murmur3_noise_at(seeds: torch.Tensor, pos: torch.Tensor, mask: torch.Tensor,
                     transform: Callable[[torch.Tensor], torch.Tensor], fill: float,
                     use_fp64: bool = False) -> torch.Tensor:
    """``transform(u)`` of vLLM's murmur3 uniform ``u`` of (seed, pos, token id) for the True
    cells of ``mask`` [rows, vocab] only (``seeds``/``pos`` [rows] int64), ``fill`` elsewhere;
    fp32 (fp64 from ``murmur3_uniform64`` with ``use_fp64``). Noise only matters where the
    logits are finite (a top-k/top-p row keeps a few dozen of ~49k tokens), and the int64 hash
    of every cell is most of a sampled host step otherwise."""
    uniform = murmur3_uniform64 if use_fp64 else murmur3_uniform32
    if bool(mask.all()):
        keys = torch.arange(mask.shape[1], dtype=torch.int64)[None, :]
        return transform(uniform(seeds[:, None], pos[:, None], keys))
    r, c = mask.nonzero(as_tuple=True)
    out = torch.full(mask.shape, fill, dtype=torch.float64 if use_fp64 else torch.float32)
    out[r, c] = transform(uniform(seeds[r], pos[r], c))
    return out


def gumbel_of(u: torch.Tensor) -> torch.Tensor:
    """vLLM's Gumbel noise of a uniform: ``-log(-log(1 - u))`` for fp32 (``_log1p_neg_stable``),
    ``-log(-log(u))`` for fp64 (``gumbel_noised_argmax``)."""
    if u.dtype == torch.float64:
        return -torch.log(-torch.log(u))
    return -torch.log(-torch.log1p(-u))


_DRAFT_NOISE_SALT = 1 << 30


def _store_logits_cache(cache, col, rows_src, idx, row_mapping) -> torch.Tensor:
    """The draft-logits cache write of ``gumbel_block_argmax``: row ``idx`` (through
    ``row_mapping`` when sharded; -1 rows skipped), column ``col`` (scalar or per row) gets the
    pre-temperature logits. Returns the per-row column (int64) for the seed mix."""
    n = idx.shape[0]
    cols = col.to(torch.int64).reshape(-1)
    cols = cols.expand(n) if cols.numel() == 1 else cols[:n]
    rows = idx if row_mapping is None else torch.where(
        idx >= 0, row_mapping[idx.clamp_min(0)].to(torch.int64), -1)
    keep = rows >= 0
    vocab = rows_src.shape[1]
    cache[rows[keep], cols[keep], :vocab] = rows_src[keep].to(cache.dtype)
    return cols


def gumbel_sample(logits, expanded_idx_mapping, temperature, seed, pos, apply_temperature,
                  is_drafting, logits_cache=None, logits_cache_col=None, use_fp64=False,
                  logits_cache_source=None, logits_cache_row_mapping=None, bias=None):
    """``gumbel_sample``: per row, argmax at temperature 0 (first NaN wins, as torch.argmax),
    else argmax of logits/T + Gumbel noise from vLLM's murmur3 stream (seed, pos, token id;
    fp64 noise from ``murmur3_uniform64`` with ``use_fp64``). With a draft-logits cache
    (``draft_sample_method="probabilistic"``) the pre-temperature logits (``logits_cache_source``
    if given) are stored at [row, col] and the seed is mixed with the column
    (``spec_step_seed``), as ``gumbel_block_argmax`` does.

    Without a draft-logits cache or fp64 noise (a plain sampling step), which rows are greedy is
    not read back (a host sync on a device): the noise is drawn for every row and kept where
    T != 0. An all-greedy batch does not come here on the host: the runner's sampler knows it
    from its host copy of the temperatures and takes :func:`greedy_sample`
    (``worker/mrv2_sampler.py``). With drafts the noise is drawn only for the sampled rows'
    finite logits (:func:`murmur3_noise_at`), which reads the masks back."""
    x = logits if bias is None else (logits.float() + bias.float()).to(logits.dtype)
    idx = expanded_idx_mapping.to(torch.int64)
    cols = None
    if logits_cache is not None:
        src = x if logits_cache_source is None else logits_cache_source
        cols = _store_logits_cache(logits_cache, logits_cache_col, src, idx,
                                   logits_cache_row_mapping)
    x = x.double() if use_fp64 else x.float()
    valid = idx >= 0
    temp = torch.where(valid, temperature[idx.clamp_min(0)].float(), 0.0)
    noisy = temp != 0
    if pos is None:  # callers pass no positions for an all-greedy batch (mrv2_spec_decode)
        return x.argmax(dim=-1) if use_fp64 else greedy_sample(x)
    if cols is None and not use_fp64:
        z = x / torch.where(noisy, temp, 1.0)[:, None] if apply_temperature else x
        p = pos.to(torch.int64)[:, None] + (_DRAFT_NOISE_SALT if is_drafting else 0)
        s = seed[idx.clamp_min(0)].to(torch.int64)[:, None]
        keys = torch.arange(x.shape[1], dtype=torch.int64, device=x.device)[None, :]
        u = murmur3_uniform32(s, p, keys)
        return greedy_sample(torch.where(noisy[:, None], z + gumbel_of(u), x))
    if bool(noisy.any()):
        rows = noisy.nonzero().squeeze(1)
        t = temp[rows, None].to(x.dtype)
        z = x[rows] / t if apply_temperature else x[rows]
        p = pos[rows].to(torch.int64)[:, None] + (_DRAFT_NOISE_SALT if is_drafting else 0)
        s = seed[idx[rows].clamp_min(0)].to(torch.int64)
        if cols is not None:
            s = s ^ (cols[rows] << 32)
        # noise where it can change the argmax: finite logits (masked ones stay -inf)
        noise = murmur3_noise_at(s, p[:, 0], z > float("-inf"), gumbel_of, 0.0, use_fp64)
        x = x.clone()
        x[rows] = z + noise
    # one argmax over every row (greedy rows as they are, sampled rows noised)
    if use_fp64:
        return x.argmax(dim=-1)
    return greedy_sample(x)


def greedy_sample(logits: torch.Tensor) -> torch.Tensor:
    """Index of each row's largest logit, ``torch.argmax(dim=-1)`` semantics (the first maximal
    index; NaN counts as the largest): ``logits`` [rows, vocab] float -> [rows] int64, through
    ``ascend_ops.greedy_argmax`` (a C++ kernel parallel over rows in emulation, ``argmax`` on the
    NPU and the simulated NPU); an empty batch takes ``argmax`` (shape only, no kernel)."""
    if logits.shape[0] == 0:
        return logits.argmax(dim=-1)
    import ascend_ops

    return ascend_ops.greedy_argmax(logits)


@_kernel("_temperature_kernel", "logits")
def apply_temperature(logits, expanded_idx_mapping, temperature) -> None:
    """``apply_temperature``: rows whose temperature is not 0 or 1 are divided by it."""
    t = temperature[expanded_idx_mapping.to(torch.int64)].float()
    scale = torch.where((t == 0) | (t == 1), 1.0, t)
    logits.copy_((logits.float() / scale[:, None]).to(logits.dtype))


# ---- vllm/v1/worker/gpu/sample/penalties.py (wrapper level) ----------------------------------

def bincount(expanded_idx_mapping, all_token_ids, prompt_len, prefill_len, prompt_bin_mask,
             output_bin_counts, max_prefill_len) -> None:
    """``bincount``: for each new penalised request, the prompt's token set as a bit mask
    (bit t%32 of int32 word t//32) and counts of the tokens between prompt and prefill end
    (a resumed request's earlier outputs)."""
    for r in expanded_idx_mapping.tolist():
        prompt_bin_mask[r] = 0
        output_bin_counts[r] = 0
        plen, flen = int(prompt_len[r]), int(prefill_len[r])
        toks = all_token_ids[r, :plen].to(torch.int64)
        words = torch.zeros(prompt_bin_mask.shape[1], dtype=torch.int64)
        bits = torch.zeros(prompt_bin_mask.shape[1], 32, dtype=torch.bool)
        bits[toks // 32, toks % 32] = True
        words = (bits.to(torch.int64) << torch.arange(32)).sum(dim=1)
        # two's-complement wrap into int32 (bit 31 set -> negative), as the kernel's atomic_or
        prompt_bin_mask[r] = torch.where(words >= 2**31, words - 2**32, words).to(torch.int32)
        if flen > plen:
            out = all_token_ids[r, plen:flen].to(torch.int64)
            output_bin_counts[r].index_add_(0, out, torch.ones_like(out, dtype=output_bin_counts.dtype))


def apply_penalties(logits, expanded_idx_mapping, token_ids, expanded_local_pos,
                    repetition_penalty, frequency_penalty, presence_penalty, prompt_bin_mask,
                    output_bin_counts) -> None:
    """``apply_penalties``: repetition (prompt or output tokens), frequency and presence
    penalties per logits row; a draft row also counts the drafts before it in its request."""
    vocab = logits.shape[1]
    shifts = torch.arange(32)
    for i, r in enumerate(expanded_idx_mapping.tolist()):
        rep, freq, pres = (float(repetition_penalty[r]), float(frequency_penalty[r]),
                           float(presence_penalty[r]))
        if rep == 1.0 and freq == 0.0 and pres == 0.0:
            continue
        counts = output_bin_counts[r, :vocab].clone()
        pos = int(expanded_local_pos[i])
        start = i - pos
        for prev in range(pos):
            counts[int(token_ids[start + prev + 1])] += 1
        in_output = counts > 0
        row = logits[i].float()
        if rep != 1.0:
            words = prompt_bin_mask[r].to(torch.int64) & _MASK32
            in_prompt = ((words[:, None] >> shifts) & 1).bool().reshape(-1)[:vocab]
            scale = torch.where(in_prompt | in_output, rep, 1.0)
            row = row * torch.where(row > 0, 1.0 / scale, scale)
        row = row - freq * counts.float() - pres * in_output.float()
        logits[i] = row.to(logits.dtype)


# ---- vllm/v1/worker/gpu/sample/min_p.py, logit_bias.py (wrapper level) -----------------------

def apply_min_p(logits, expanded_idx_mapping, min_p) -> None:
    """``apply_min_p``: logits below max + log(min_p) become -inf (rows with min_p 0 kept)."""
    p = min_p[expanded_idx_mapping.to(torch.int64)].float()
    rows = (p != 0).nonzero().squeeze(1)
    if rows.numel() == 0:
        return
    x = logits[rows]
    threshold = x.float().amax(dim=-1, keepdim=True) + torch.log(p[rows])[:, None]
    logits[rows] = torch.where(x.float() < threshold, float("-inf"), x)


def apply_logit_bias(logits, expanded_idx_mapping, pos, num_allowed_token_ids,
                     allowed_token_ids, num_logit_bias, logit_bias_token_ids, logit_bias,
                     min_lens, num_stop_token_ids, restore_when_all_masked, stop_token_ids,
                     check_all_masked_rows=False) -> None:
    """``apply_logit_bias``, per logits row: keep only the allowed token ids, add the logit
    bias, and before ``min_tokens`` mask the stop tokens (restored when that would mask the
    whole row of a structured-output request)."""
    for i, r in enumerate(expanded_idx_mapping.tolist()):
        row = logits[i]
        n = int(num_allowed_token_ids[r])
        if n > 0:
            ids = allowed_token_ids[r, :n].to(torch.int64)
            kept = row[ids].clone()
            row.fill_(float("-inf"))
            row[ids] = kept
        n = int(num_logit_bias[r])
        if n > 0:
            ids = logit_bias_token_ids[r, :n].to(torch.int64)
            row[ids] += logit_bias[r, :n].to(row.dtype)
        n = int(num_stop_token_ids[r])
        if n > 0 and int(pos[i]) + 1 < int(min_lens[r]):
            ids = stop_token_ids[r, :n].to(torch.int64)
            saved = row[ids].clone()
            row[ids] = float("-inf")
            if check_all_masked_rows and int(restore_when_all_masked[r]) and bool(
                    (row == float("-inf")).all()):
                finite = torch.isfinite(saved)
                row[ids[finite]] = saved[finite]


# ---- vllm/v1/worker/gpu/sample/bad_words.py, structured_outputs.py --------------------------

def apply_bad_words(logits, expanded_idx_mapping, bad_word_token_ids, bad_word_offsets,
                    num_bad_words, all_token_ids, prompt_len, total_len, input_ids,
                    expanded_local_pos, max_num_bad_words) -> None:
    """``apply_bad_words``: for each logits row and bad word whose prefix ends the request's
    output (drafts of this step included: read from ``input_ids``), ban its last token."""
    for i, r in enumerate(expanded_idx_mapping.tolist()):
        n = int(num_bad_words[r])
        if n == 0:
            continue
        pos = int(expanded_local_pos[i])
        first = i - pos
        plen, tlen = int(prompt_len[r]), int(total_len[r])
        out_len = tlen - plen
        eff = out_len + pos
        offsets = bad_word_offsets[r, :n + 1].tolist()
        for w in range(n):
            start, end = offsets[w], offsets[w + 1]
            prefix = end - 1 - start
            if prefix > eff:
                continue
            ok = True
            for k in range(prefix):
                at = eff - prefix + k
                actual = (int(input_ids[first + at - out_len + 1]) if at >= out_len
                          else int(all_token_ids[r, plen + at]))
                if int(bad_word_token_ids[r, start + k]) != actual:
                    ok = False
                    break
            if ok:
                logits[i, int(bad_word_token_ids[r, end - 1])] = float("-inf")


def _apply_grammar_bitmask(grid, logits_ptr, logits_stride, logits_indices_ptr,
                           cu_num_logits_ptr, bitmask_ptr, bitmask_stride, vocab_size,
                           MASK_STRIDE=1, BLOCK_SIZE=None, **_: Any) -> None:
    """``_apply_grammar_bitmask_kernel``: bitmask row m applies to logits row
    ``cu_num_logits[req] + position`` (``logits_indices[m] = req * MASK_STRIDE + position``,
    skipped past the request's rows); a 0 bit (token t: word t//32, bit t%32) bans token t."""
    num_masks = _grid(grid, 0)
    shifts = torch.arange(32)
    cu = cu_num_logits_ptr.tolist()
    for m, mapping in enumerate(logits_indices_ptr[:num_masks].tolist()):
        req, position = divmod(mapping, MASK_STRIDE)
        if position >= cu[req + 1] - cu[req]:
            continue
        words = bitmask_ptr[m].to(torch.int64) & _MASK32
        allowed = ((words[:, None] >> shifts) & 1).bool().reshape(-1)[:vocab_size]
        row = logits_ptr[cu[req] + position]
        row[:vocab_size].masked_fill_(~allowed, float("-inf"))


def get_prompt_logprobs_token_ids(num_tokens, query_start_loc, idx_mapping, num_computed_tokens,
                                  all_token_ids):
    """``get_prompt_logprobs_token_ids``: for each query row, the *next* prompt token
    (``all_token_ids[req, done + 1 + i]``), whose logprob that row's logits give."""
    token_ids = torch.zeros(num_tokens, dtype=torch.int64)
    qsl = query_start_loc.tolist()
    width = all_token_ids.shape[1]
    for b, r in enumerate(idx_mapping.tolist()):
        start, end = qsl[b], qsl[b + 1]
        done = int(num_computed_tokens[r])
        # the kernel reads past the last prompt token too (that row's result is discarded)
        target = torch.arange(done + 1, done + 1 + end - start).clamp_max(width - 1)
        token_ids[start:end] = all_token_ids[r, target].to(torch.int64)
    return token_ids


# ---- vllm/v1/worker/gpu/sample/logprob.py ----------------------------------------------------

def compute_token_logprobs(logits, token_ids):
    """``compute_token_logprobs``: log_softmax of each row at ``token_ids`` (fp32)."""
    lp = torch.log_softmax(logits.float(), dim=-1)
    return lp.gather(-1, token_ids.to(torch.int64))


def _ranks(grid, output_ptr, logits_ptr, logits_stride, token_ids_ptr, vocab_size,
           BLOCK_SIZE=None, **_: Any) -> None:
    """``_ranks_kernel``: 1-based rank of the chosen token = number of logits greater than or
    equal to its own (itself included; vLLM's kernel counts ``logits >= x``)."""
    n = _grid(grid, 0)
    x = logits_ptr[:n, :vocab_size]
    chosen = x.gather(-1, token_ids_ptr[:n].to(torch.int64)[:, None])
    output_ptr[:n] = (x >= chosen).sum(dim=-1)


# ---- vllm/v1/worker/gpu/model_states/prompt_embeds.py ----------------------------------------

def _apply_prompt_embeds(grid, inputs_embeds_ptr, inputs_embeds_stride, embeds_ptrs_ptr,
                         mask_ptrs_ptr, embeds_lens_ptr, idx_mapping_ptr, query_start_loc_ptr,
                         num_computed_tokens_ptr, hidden_size, TOKEN_BLOCK=None, BLOCK_SIZE=None,
                         **_: Any) -> None:
    """``_apply_prompt_embeds_kernel``: for each batch row whose request still has prompt
    embeddings past its computed tokens, copy rows ``num_computed .. num_computed + n`` of them
    (n = the row's scheduled tokens, capped by the embeddings left) onto ``inputs_embeds`` at
    the row's query start, skipping positions the request's mask marks as token ids. The
    per-request embeddings and masks arrive as uint64 host addresses (``PromptEmbedsState``)."""
    num_reqs = _grid(grid, 0)
    ptrs = embeds_ptrs_ptr.view(torch.int64).tolist()
    masks = mask_ptrs_ptr.view(torch.int64).tolist()
    lens = embeds_lens_ptr.tolist()
    idx = idx_mapping_ptr[:num_reqs].tolist()
    qsl = query_start_loc_ptr[:num_reqs + 1].tolist()
    computed = num_computed_tokens_ptr.tolist()
    for b, req in enumerate(idx):
        total, done = lens[req], computed[req]
        rows = min(qsl[b + 1] - qsl[b], total - done)
        if done >= total or rows <= 0:
            continue
        src = _host_tensor_at(ptrs[req], total * hidden_size, inputs_embeds_ptr.dtype)
        src = src.view(total, hidden_size)[done:done + rows]
        dst = inputs_embeds_ptr[qsl[b]:qsl[b] + rows]
        if masks[req] == 0:
            dst[:, :hidden_size] = src
        else:
            keep = _host_tensor_at(masks[req], total, torch.uint8)[done:done + rows] == 0
            dst[keep, :hidden_size] = src[keep]


# ---- vllm/v1/worker/gpu/spec_decode/ (n-gram; verification: host/mrv2_spec_decode.py) --------------------------

def gather_draft_sampled(input_ids, positions, logits_indices, expanded_idx_mapping,
                         expanded_local_pos, prefill_len):
    """``gather_draft_sampled``: the input token and position of each logits row; draft rows
    of requests still inside their prefill become -1 (always rejected)."""
    tok = input_ids[logits_indices]
    pos = positions[logits_indices]
    local = expanded_local_pos.to(pos.dtype)
    placeholder = (local > 0) & (pos - local < prefill_len[expanded_idx_mapping.to(torch.int64)])
    return torch.where(placeholder, -1, tok).to(input_ids.dtype), pos


def ngram_propose(token_ids, total_len, idx_mapping, num_sampled, last_sampled, min_n, max_n,
                  k, drafts):
    """The n-gram proposal of vLLM's ``NgramGPUSpeculator`` (``_ngram_scan_kernel`` +
    ``_ngram_finalize_kernel``): per request, the longest n in [min_n, max_n] whose last n
    tokens occur earlier (latest occurrence on ties), drafts = the k tokens after it, the last
    sampled token where the history runs out or nothing matched; rows that sampled nothing
    this step keep ``last_sampled``."""
    width = token_ids.shape[1]
    lens = total_len.tolist()
    ns = num_sampled.tolist()
    for b, r in enumerate(idx_mapping.tolist()):
        last = int(last_sampled[r])
        seq_len = lens[r]
        row = token_ids[r, :seq_len]
        best = None
        if ns[b] > 0 and seq_len >= min_n:
            for n in range(max_n, min_n - 1, -1):
                if n > seq_len - 1:
                    continue
                suffix = row[seq_len - n:]
                windows = row[: seq_len - 1].unfold(0, n, 1) if seq_len - 1 >= n else None
                if windows is None:
                    continue
                hits = (windows == suffix).all(dim=1).nonzero().squeeze(1)
                if hits.numel():
                    best = (n, int(hits.max()))
                    break
        out = torch.full((k,), last, dtype=torch.int64)
        if best is not None:
            start = best[1] + best[0]
            avail = max(seq_len - start, 0)
            take = min(avail, k)
            if take:
                out[:take] = token_ids[r, start:min(start + take, width)].to(torch.int64)
        drafts[b, :k] = out
    return drafts[: idx_mapping.shape[0]]


def _unsupported(name: str) -> Callable[..., Any]:
    def launch(*_: Any, **__: Any) -> None:
        raise NotImplementedError(f"MRv2 host kernels: {name} has no host stand-in yet "
                                  "(docs/model-runner-v2.md)")
    return launch


G = "vllm.v1.worker.gpu"

#: vLLM 0.34 qualified name -> stand-in, for ``vllm.triton_utils.dispatcher.register_kernels``
KERNELS: dict[str, Any] = {
    f"{G}.buffer_utils._apply_write_kernel": HostLaunch(_apply_write),
    f"{G}.block_table._gather_block_tables_kernel": HostLaunch(_gather_block_tables),
    f"{G}.block_table._compute_slot_mappings_kernel": HostLaunch(_compute_slot_mappings),
    f"{G}.input_batch.prepare_prefill_inputs": prepare_prefill_inputs,
    f"{G}.input_batch.prepare_pos_seq_lens": prepare_pos_seq_lens,
    f"{G}.input_batch.combine_sampled_and_draft_tokens": combine_sampled_and_draft_tokens,
    f"{G}.input_batch.get_num_sampled_and_rejected": get_num_sampled_and_rejected,
    f"{G}.input_batch.post_update": post_update,
    f"{G}.input_batch.post_update_num_computed_tokens": post_update_num_computed_tokens,
    f"{G}.input_batch.expand_idx_mapping": expand_idx_mapping,
    f"{G}.model_states.prompt_embeds._apply_prompt_embeds_kernel":
        HostLaunch(_apply_prompt_embeds),
    f"{G}.sample.gumbel.gumbel_sample": gumbel_sample,
    f"{G}.sample.gumbel.apply_temperature": apply_temperature,
    f"{G}.sample.logprob.compute_token_logprobs": compute_token_logprobs,
    f"{G}.sample.logprob._ranks_kernel": HostLaunch(_ranks),
    # logprob_token_ids: host/mrv2_logprobs.py (compute_topk_scores, _fill_logprob_token_ids_kernel)
    f"{G}.sample.min_p.apply_min_p": apply_min_p,
    f"{G}.sample.logit_bias.apply_logit_bias": apply_logit_bias,
    f"{G}.sample.penalties.bincount": bincount,
    f"{G}.sample.penalties.apply_penalties": apply_penalties,
    f"{G}.sample.bad_words.apply_bad_words": apply_bad_words,
    f"{G}.structured_outputs._apply_grammar_bitmask_kernel": HostLaunch(_apply_grammar_bitmask),
    f"{G}.sample.prompt_logprob.get_prompt_logprobs_token_ids": get_prompt_logprobs_token_ids,
    # reached only with the matching sampling parameters or features: fail loudly, by name
    f"{G}.metrics.logits._num_nans_kernel": _unsupported("_num_nans_kernel"),
    f"{G}.sample.output._compact_sampling_mask_kernel":
        _unsupported("_compact_sampling_mask_kernel"),
    f"{G}.sample.thinking_budget._thinking_budget_kernel":
        _unsupported("_thinking_budget_kernel"),
    f"{G}.spec_decode.rejection_sampler.gather_draft_sampled": gather_draft_sampled,
}

_registered = False


def register(kernels: dict[str, Any] | None = None) -> None:
    """Register ``kernels`` (default :data:`KERNELS`; ``host.mrv2_spec_decode.register`` adds
    the speculative-decoding ones) with vLLM's dispatcher in one call, once per process (a
    second walk of ``sys.modules`` is harmful: ``register_kernels`` reads every module's
    attributes, which raises on llvmlite's wrappers once numba is imported)."""
    global _registered
    if _registered:
        return
    _registered = True
    from vllm.triton_utils.dispatcher import register_kernels

    register_kernels(KERNELS if kernels is None else kernels)


# patch: mrv2-triton-gate (declared in vllm_ascend_platform.patches.declarations)
class triton_gate_open:  # noqa: N801  (used as a context-manager function)
    """Within the block ``HAS_TRITON`` is True in ``vllm.v1.worker.gpu_worker`` (read only by
    ``Worker.__init__``'s refusal) and ``vllm.v1.worker.gpu.spec_decode.ngram.speculator`` (read
    only by ``NgramGPUSpeculator.__init__``'s); restored on exit."""

    _MODULES = ("vllm.v1.worker.gpu_worker", "vllm.v1.worker.gpu.spec_decode.ngram.speculator")
    _FLAG = "HAS_TRITON"  # by name: vLLM 0.33's gpu_worker has no such attribute (mypy)

    # patch: mrv2-triton-gate (installs)
    def __enter__(self) -> None:
        import importlib

        self._saved = []
        for name in self._MODULES:
            module = importlib.import_module(name)
            self._saved.append((module, getattr(module, self._FLAG)))
            setattr(module, self._FLAG, True)

    # patch: mrv2-triton-gate (undoes)
    def __exit__(self, *exc: object) -> None:
        for module, value in self._saved:
            setattr(module, self._FLAG, value)
