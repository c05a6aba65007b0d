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
:mod:`vllm_ascend_platform.host.mrv2_spec_decode`, registered together with these. Not covered
yet (raise NotImplementedError when reached, naming the kernel): logprob token ids, NaN
metrics, sampling masks, thinking budget, watermarking and context parallelism.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

_MASK32 = 0xFFFFFFFF

# ---- pointer tables (block tables) ----------------------------------------------------------

_POINTERS: dict[int, torch.Tensor] = {}


def register_pointers(tensors: list[torch.Tensor]) -> None:
    """Make ``tensors`` findable by their ``data_ptr()`` (the values vLLM's ``BlockTables``
    packs into ``block_table_ptrs``/``input_block_table_ptrs``, ``_make_ptr_tensor``)."""
    for t in tensors:
        _POINTERS[t.data_ptr()] = t


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
    # uint64 on the host: read through int64 (same bits; addresses are < 2**63)
    return [_tensor_at(int(p)) for p in ptrs.view(torch.int64).tolist()]


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


# ---- vllm/v1/worker/gpu/buffer_utils.py ------------------------------------------------------

def _apply_write(grid, output_ptr, output_stride, write_indices_ptr, write_starts_ptr,
                 write_contents_ptr, write_cu_lens_ptr, write_group_ids_ptr, BLOCK_SIZE=None,
                 MULTI_GROUP=False, **_: Any) -> None:
    """``_apply_write_kernel``: write ``n`` staged slices, slice ``i`` = contents
    ``[cu[i-1], cu[i])`` into row ``indices[i]`` from column ``starts[i]``."""
    n = _grid(grid, 0)
    idx = write_indices_ptr[:n].tolist()
    starts = write_starts_ptr[:n].tolist()
    cu = write_cu_lens_ptr[:n].tolist()
    if MULTI_GROUP:
        outputs = _tensors_at(output_ptr)
        groups = write_group_ids_ptr[:n].tolist()
        strides = output_stride.tolist()
    prev = 0
    for i in range(n):
        # the kernel's addressing: base + row * row_stride + start (1-D targets: stride 1)
        out = (outputs[groups[i]] if MULTI_GROUP else output_ptr).view(-1)
        stride = strides[groups[i]] if MULTI_GROUP else int(output_stride)
        at = idx[i] * stride + starts[i]
        out[at:at + cu[i] - prev] = write_contents_ptr[prev:cu[i]]
        prev = cu[i]


# ---- vllm/v1/worker/gpu/block_table.py -------------------------------------------------------

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
        counts = num_blocks_ptr[g, req].to(torch.int64)
        rows = src[req]
        cols = torch.arange(src.shape[1])
        keep = cols[None, :] < counts[:, None]
        if MASK_SLIDING_WINDOW:
            reach = int(sliding_window_reach_ptr[g])
            if reach > 0:
                first = num_computed_tokens_ptr[req].to(torch.int64)
                num_null = (first - reach).clamp_min(0) // int(block_sizes_ptr[g])
                rows = torch.where(cols[None, :] >= num_null[:, None], rows, 0)
        dst[:num_reqs] = torch.where(keep, rows, dst[:num_reqs])
        if num_rows > num_reqs:
            dst[num_reqs:num_rows] = 0


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
    tables = _tensors_at(block_table_ptrs)
    qsl = query_start_loc[: num_reqs + 1].to(torch.int64)
    total = int(qsl[-1]) if num_reqs > 0 else 0
    for g in range(num_groups):
        out = slot_mappings_ptr[g]
        if total:
            counts = qsl[1:] - qsl[:-1]
            req_of_token = torch.repeat_interleave(idx_mapping[:num_reqs].to(torch.int64), counts)
            p = pos[:total].to(torch.int64)
            bs = int(block_sizes[g])
            real = req_of_token >= 0
            enabled = bool(slot_mapping_enabled[g])
            block_idx = p // bs if enabled else torch.zeros_like(p)
            table = tables[g]
            numbers = table[req_of_token.clamp_min(0), block_idx].to(torch.int64)
            slots = numbers * bs + p % bs
            ok = real & enabled
            out[:total] = torch.where(ok, slots, PAD_ID)
        out[total:max_num_tokens] = PAD_ID


# ---- vllm/v1/worker/gpu/input_batch.py (wrapper level) ---------------------------------------

def prepare_prefill_inputs(input_ids, next_prefill_tokens, idx_mapping, query_start_loc,
                           all_token_ids, prefill_len, num_computed_tokens) -> None:
    """``prepare_prefill_inputs``: for each prefilling request, copy its scheduled prompt
    tokens into ``input_ids`` and the next ``num_lookahead`` prompt tokens (0 past the prompt)
    into column ``req`` of ``next_prefill_tokens``."""
    num_lookahead = next_prefill_tokens.shape[0]
    qsl = query_start_loc.tolist()
    for b, r in enumerate(idx_mapping.tolist()):
        plen, done = int(prefill_len[r]), int(num_computed_tokens[r])
        if done >= plen:
            continue
        start, end = qsl[b], qsl[b + 1]
        n = end - start
        input_ids[start:end] = all_token_ids[r, done:done + n]
        if num_lookahead:
            ahead = torch.arange(done + n, done + n + num_lookahead)
            valid = ahead < plen
            vals = all_token_ids[r, ahead.clamp_max(all_token_ids.shape[1] - 1)]
            next_prefill_tokens[:, r] = torch.where(valid, vals, 0).to(next_prefill_tokens.dtype)


def prepare_pos_seq_lens(idx_mapping, query_start_loc, num_computed_tokens, pos,
                         seq_lens) -> None:
    """``prepare_pos_seq_lens``: positions ``done..done+query_len`` per request, seq_lens =
    done + query_len, seq_lens past the batch zeroed (full-graph padding)."""
    num_reqs = idx_mapping.shape[0]
    qsl = query_start_loc[: num_reqs + 1].to(torch.int64)
    counts = qsl[1:] - qsl[:-1]
    done = num_computed_tokens[idx_mapping.to(torch.int64)].to(torch.int64)
    total = int(qsl[-1]) if num_reqs else 0
    if total:
        first = torch.repeat_interleave(done - qsl[:-1], counts)
        pos[:total] = first + torch.arange(total)
    seq_lens[:num_reqs] = (done + counts).to(seq_lens.dtype)
    seq_lens[num_reqs:] = 0


def combine_sampled_and_draft_tokens(input_ids, idx_mapping, last_sampled_tokens,
                                     query_start_loc, seq_lens, prefill_len, draft_tokens,
                                     cu_num_logits, num_logits, num_new_sampled_tokens=1):
    """``combine_sampled_and_draft_tokens``: logits indices = the last ``num_logits`` query
    rows of each request; decoding requests get their last sampled token (and drafts) written
    into ``input_ids``."""
    logits_indices = torch.empty(num_logits, dtype=torch.int64)
    qsl = query_start_loc.tolist()
    cu = cu_num_logits.tolist()
    for b, r in enumerate(idx_mapping.tolist()):
        n_logits = cu[b + 1] - cu[b]
        n_draft = n_logits - num_new_sampled_tokens
        query_end = qsl[b + 1]
        start = query_end - n_logits
        logits_indices[cu[b]:cu[b + 1]] = torch.arange(start, query_end)
        seq_len, plen = int(seq_lens[b]), int(prefill_len[r])
        if seq_len <= plen:
            continue
        if num_new_sampled_tokens > 0 and seq_len - n_logits >= plen:
            input_ids[start] = last_sampled_tokens[r]
        if n_draft > 0:
            input_ids[query_end - n_draft:query_end] = draft_tokens[r, :n_draft]
    return logits_indices


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


def post_update(idx_mapping, num_computed_tokens, last_sampled_tokens, output_bin_counts,
                sampled_tokens, num_sampled, num_rejected, query_start_loc, all_token_ids,
                total_len, draft_tokens=None, draft_tokens_out=None) -> None:
    """``post_update``: after sampling, per request (idx >= 0): keep drafts, append the sampled
    tokens to ``all_token_ids``, set the last sampled token, count output tokens for penalties,
    advance ``num_computed_tokens`` by query_len - rejected."""
    qsl = query_start_loc.tolist() if query_start_loc is not None else None
    ns, nr = num_sampled.tolist(), num_rejected.tolist()
    for b, r in enumerate(idx_mapping.tolist()):
        if r < 0:
            continue
        if draft_tokens is not None:
            draft_tokens_out[r] = draft_tokens[b]
        total = int(total_len[r])
        k = ns[b]
        if k > 0:
            toks = sampled_tokens[b, :k]
            last_sampled_tokens[r] = toks[-1]
            total_len[r] = total + k
            all_token_ids[r, total:total + k] = toks.to(all_token_ids.dtype)
            if output_bin_counts is not None:
                output_bin_counts[r].index_add_(
                    0, toks.to(torch.int64), torch.ones(k, dtype=output_bin_counts.dtype))
        query_len = (qsl[b + 1] - qsl[b]) if qsl is not None else 0
        delta = query_len - nr[b]
        if delta:
            num_computed_tokens[r] += delta


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
    (``spec_step_seed``), as ``gumbel_block_argmax`` does."""
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
    # one argmax over every row (greedy rows as they are, sampled rows noised): the device's
    # greedy op (docs/model-runner-v2.md: AscendSampler's greedy path moves here)
    if use_fp64 or x.shape[0] == 0:
        return x.argmax(dim=-1)
    import ascend_ops

    return ascend_ops.greedy_argmax(x)


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
    # reached only with the matching sampling parameters or features: fail loudly, by name
    f"{G}.sample.logprob._fill_logprob_token_ids_kernel": _unsupported("_fill_logprob_token_ids_kernel"),
    f"{G}.sample.min_p.apply_min_p": apply_min_p,
    f"{G}.sample.logit_bias.apply_logit_bias": apply_logit_bias,
    f"{G}.sample.penalties.bincount": bincount,
    f"{G}.sample.penalties.apply_penalties": apply_penalties,
    f"{G}.sample.bad_words.apply_bad_words": apply_bad_words,
    f"{G}.structured_outputs._apply_grammar_bitmask_kernel": HostLaunch(_apply_grammar_bitmask),
    f"{G}.sample.prompt_logprob.get_prompt_logprobs_token_ids": get_prompt_logprobs_token_ids,
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
    second walk of ``sys.modules`` is harmful, see ``triton_overrides.register``)."""
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
