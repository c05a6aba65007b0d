# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Reference kernels of ``npu_lightning_indexer`` and ``npu_sparse_flash_attention`` (the
DeepSeek-V3.2 sparse-attention operators), written per query row from the operators' documents
and kernel sources, independently of ``ascend_ops.reference`` (the tests compare the two):

* Ascend/op-plugin@517f2e7 ``docs/zh/custom_APIs/torch_npu/torch_npu-npu_lightning_indexer.md``:
  ``Indices = Top-k{ [1]_{1xg} @ [(W @ [1]_{1xS_k}) * ReLU(Q_index @ K_index^T)] }`` per token,
  sparse_mode 3 = rightDownCausal (query i of a batch with S1 queries and S2 keys sees keys
  j <= S2 - S1 + i), 0 = no mask; output int32 [T1, N2, sparse_count] (TND) and an empty
  ``sparse_values`` without ``return_value`` (``LightningIndexerKernelNpuOpApi.cpp``).
  Unfilled slots are -1: the kernel starts its top-k buffer as (-inf, -1) pairs and only
  visible keys enter it (vllm-project/vllm-ascend@182b75e
  ``csrc/attention/lightning_indexer/op_kernel/arch22/lightning_indexer_vector.h``, ``INVALID_INDEX``).
  Ties: the lower position first (the simulator's choice; the kernel's merge sort has its own).
* Ascend/op-plugin@517f2e7 ``docs/zh/custom_APIs/torch_npu/torch_npu-npu_sparse_flash_attention.md``:
  ``softmax(Q K~^T * scale) V~`` with K~, V~ the keys gathered at ``sparse_indices`` (entry b =
  the ``sparse_block_size`` tokens from ``b * sparse_block_size``), in MLA-absorb mode
  ``Q = [query, query_rope]``, ``K~ = [key, key_rope]``; sparse_mode 3 also drops positions past
  the causal limit. Which entries are read follows the kernel (vllm-ascend@182b75e
  ``csrc/attention/sparse_flash_attention/op_kernel/arch22/sparse_flash_attention_kernel_mla.h``,
  ``GetSparseActualSeqLen`` / ``CalcSinnerTopKBegin``): threshold = S2 (mode 0) or S2 - S1 + i + 1
  (mode 3); only the first min(sparse_size, ceil(threshold / sparse_block_size)) entries, up to
  the first -1; blocks starting at or past the threshold are skipped, a block crossing it is
  cut there; a row with nothing selected is zeros (``DealActSeqLenIsZero``). Output
  [T1, N1, D] in query's dtype; ``softmax_max`` / ``softmax_sum`` empty without
  ``return_softmax_lse`` (``SparseFlashAttentionKernelNpuOpApi.cpp``).

Modelled: TND query with a PA_BSND cache (vllm-ascend's A2/A3 calls). Query rows past the last
``actual_seq_lengths_query`` end (graph padding) come back -1 / zeros here; what the device
leaves there is not documented. Math in float32.
"""

from __future__ import annotations

import torch


def _modelled(op: str, layout_q: str, layout_kv: str) -> None:
    if layout_q != "TND" or layout_kv != "PA_BSND":
        raise NotImplementedError(f"{op}: only layout_query='TND' with a 'PA_BSND' cache is modelled, got "
                                  f"{layout_q!r} / {layout_kv!r}")


def _batches(actual_seq_lengths_query, actual_seq_lengths_kv):
    """(start, q_len, kv_len) per batch from the int32 length tensors."""
    ends = [int(v) for v in actual_seq_lengths_query.tolist()]
    kv = [int(v) for v in actual_seq_lengths_kv.tolist()]
    starts = [0, *ends[:-1]]
    return [(s, e - s, kv[b]) for b, (s, e) in enumerate(zip(starts, ends, strict=True))]


def _gather(cache: torch.Tensor, table_row: torch.Tensor, positions: list[int]) -> torch.Tensor:
    """[len(positions), D] float32 rows of one batch's logical positions from a PA_BSND cache."""
    bs = cache.shape[1]
    rows = [cache[int(table_row[p // bs]), p % bs, 0] for p in positions]
    return torch.stack(rows).float() if rows else cache.new_zeros(0, cache.shape[-1]).float()


def npu_lightning_indexer(query, key, weights, actual_seq_lengths_query=None, actual_seq_lengths_key=None,
                          block_table=None, layout_query="BSND", layout_key="BSND", sparse_count=2048,
                          sparse_mode=3, pre_tokens=None, next_tokens=None, return_value=False):
    """(sparse_indices int32 [T1, 1, sparse_count], sparse_values empty); see module docstring."""
    _modelled("npu_lightning_indexer", layout_query, layout_key)
    t_total = query.shape[0]
    indices = torch.full((t_total, key.shape[2], sparse_count), -1, dtype=torch.int32)
    for b, (start, q_len, kv_len) in enumerate(_batches(actual_seq_lengths_query, actual_seq_lengths_key)):
        keys = _gather(key, block_table[b], list(range(kv_len)))  # [S2, D]
        for i in range(q_len):
            t = start + i
            limit = kv_len - q_len + i + 1 if sparse_mode == 3 else kv_len
            limit = max(0, min(limit, kv_len))
            if limit == 0:
                continue
            per_head = torch.relu(query[t].float() @ keys[:limit].t())  # [N1, limit]
            score = (weights[t].float()[:, None] * per_head).sum(0)  # [limit]
            order = torch.sort(score, descending=True, stable=True).indices[:sparse_count]
            indices[t, 0, : order.numel()] = order.to(torch.int32)
    return indices, torch.empty(0, dtype=query.dtype)


def _selected(row: list[int], threshold: int, block: int) -> list[int]:
    """Token positions one sparse_indices row selects (kernel reading rule, module docstring)."""
    valid_count = min(len(row), -(-threshold // block))
    picked: list[int] = []
    for entry in row[:valid_count]:
        if entry == -1:
            break
        begin = entry * block
        if entry < 0 or begin >= threshold:
            continue
        picked.extend(range(begin, min(begin + block, threshold)))
    return picked


def npu_sparse_flash_attention(query, key, value, sparse_indices, scale_value, block_table=None,
                               actual_seq_lengths_query=None, actual_seq_lengths_kv=None, query_rope=None,
                               key_rope=None, sparse_block_size=1, layout_query="BSND", layout_kv="BSND",
                               sparse_mode=3, pre_tokens=None, next_tokens=None, attention_mode=0,
                               return_softmax_lse=False, sinks=None):
    """(attention_out [T1, N1, D], softmax_max, softmax_sum) in MLA-absorb mode; see module docstring."""
    _modelled("npu_sparse_flash_attention", layout_query, layout_kv)
    t_total, heads, width = query.shape
    out = torch.zeros(t_total, heads, value.shape[-1])
    for b, (start, q_len, kv_len) in enumerate(_batches(actual_seq_lengths_query, actual_seq_lengths_kv)):
        for i in range(q_len):
            t = start + i
            threshold = kv_len - q_len + i + 1 if sparse_mode == 3 else kv_len
            threshold = max(0, min(threshold, kv_len))
            picked = _selected([int(v) for v in sparse_indices[t, 0].tolist()], threshold, sparse_block_size)
            if not picked:
                continue  # DealActSeqLenIsZero: zero output
            k_nope = _gather(key, block_table[b], picked)  # [P, D]
            k_rope = _gather(key_rope, block_table[b], picked)  # [P, Dr]
            v = _gather(value, block_table[b], picked)
            s = (query[t].float() @ k_nope.t() + query_rope[t].float() @ k_rope.t()) * scale_value  # [N1, P]
            out[t] = torch.softmax(s, dim=-1) @ v
    empty = torch.empty(0, dtype=torch.float32)
    return out.to(query.dtype), empty, empty.clone()


SPARSE_KERNELS = {
    "npu_lightning_indexer": npu_lightning_indexer,
    "npu_sparse_flash_attention": npu_sparse_flash_attention,
}
