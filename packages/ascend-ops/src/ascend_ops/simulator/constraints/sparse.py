# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Documented constraints of the DeepSeek-V3.2 sparse-attention operators
(``npu_lightning_indexer``, ``npu_sparse_flash_attention``) on Atlas A2/A3; registered in
``constraints.RULES``.

Sources:

* [LI-MD] Ascend/op-plugin@517f2e7 ``docs/zh/custom_APIs/torch_npu/torch_npu-npu_lightning_indexer.md``
  (参数说明, 约束说明; newer than the wheel's docstring, which predates ``return_value``).
* [SFA-MD] Ascend/op-plugin@517f2e7 ``docs/zh/custom_APIs/torch_npu/torch_npu-npu_sparse_flash_attention.md``.
* [LI-SRC] / [SFA-SRC] Ascend/op-plugin@517f2e7 ``op_plugin/ops/opapi/LightningIndexerKernelNpuOpApi.cpp``
  / ``SparseFlashAttentionKernelNpuOpApi.cpp`` (output shapes, layout checks).
* [SFA-TILING] vllm-project/vllm-ascend@182b75e
  ``csrc/attention/sparse_flash_attention/op_host/sparse_flash_attention_tiling.cpp`` (the
  same aclnnSparseFlashAttention kernel as vllm-ascend builds it: attentionMode only 2, kv head
  num 1, rope tensors both or neither, sparseMode 0/3, pre/next tokens only the default).
* [VA] vllm-project/vllm-ascend@182b75e ``vllm_ascend/device/device_op.py`` (the A2/A3 calls:
  TND query, PA_BSND cache, int32 lengths and block table, sparse_count 2048, sparse_mode 3).

The schema's default ``attention_mode=0`` is refused: [SFA-MD] and [SFA-TILING] accept only 2.
Layouts other than TND / BSND queries with a PA_BSND cache are refused by the kernels
(``kernels_sparse``) as not modelled.
"""

from __future__ import annotations

import torch

from ascend_ops.simulator.constraints.base import HALF, _contig, _dtype, _need

#: [LI-MD] sparse_count: 支持[1, 2048]以及3072、4096、5120、6144、7168、8192
LI_SPARSE_COUNTS = frozenset(range(1, 2049)) | frozenset(range(3072, 8193, 1024))
#: [SFA-MD] A3/A2: Q_N支持1/2/4/8/16/32/64/128
SFA_HEADS = (1, 2, 4, 8, 16, 32, 64, 128)
#: [LI-MD], [SFA-MD]: pre_tokens / next_tokens 仅支持默认值
DEFAULT_TOKENS = (1 << 63) - 1


def _lengths(op: str, name: str, t, batches_from: str) -> list[int]:
    """An int32 1-D lengths tensor's values ([LI-MD]/[SFA-MD]: 数据类型支持int32, 一维tensor)."""
    _dtype(t, (torch.int32,), op, name)
    _need(t.dim() == 1, op, f"{name} must be 1-D with one entry per batch ({batches_from})")
    return [int(v) for v in t.tolist()]


def _query_ends(op: str, lens, q: torch.Tensor) -> list[int]:
    # [LI-MD]/[SFA-MD] actual_seq_lengths_query: TND时必须传入, 以元素数量作为B值, 前缀和, 后一个元素
    # 的值必须大于等于前一个元素的值 (不小于0). Rows past the last end are padding: vllm-ascend pads the
    # token count for graphs and passes the ends of the real requests ([VA] sfa_v1.py@182b75e:361-368).
    _need(lens is not None, op, "layout_query='TND' needs actual_seq_lengths_query")
    ends = _lengths(op, "actual_seq_lengths_query", lens, "TND: its length is B")
    _need(len(ends) > 0, op, "actual_seq_lengths_query must have at least one batch")
    _need(all(e >= 0 for e in ends) and all(b >= a for a, b in zip(ends, ends[1:], strict=False)), op,
          "actual_seq_lengths_query must be non-negative, non-decreasing cumulative query ends")
    _need(ends[-1] <= q.shape[0], op, f"actual_seq_lengths_query ends at {ends[-1]}, past T={q.shape[0]}")
    return ends


def _paged(op: str, a: dict, key: torch.Tensor, key_name: str, lens_name: str, batches: int) -> None:
    bt = a["block_table"]
    # [LI-MD]/[SFA-MD] key (PA_BSND): [block_count, block_size, N2, D], block_size取值为16的倍数,
    # 最大支持1024; N2 (KV_N) 仅支持1.
    _need(key.dim() == 4, op, f"{key_name} (PA_BSND) must be 4-D [block_count, block_size, N2, D]")
    bs = key.shape[1]
    _need(bs % 16 == 0 and 16 <= bs <= 1024, op, f"block_size ({key_name}.shape[1]) must be a multiple of "
          f"16 in [16, 1024], got {bs}")
    _need(key.shape[2] == 1, op, f"{key_name} must have one head (N2 = 1), got {key.shape[2]}")
    # [LI-MD]/[SFA-MD] block_table: int32, 二维, 第一维长度等于B, 第二维不小于最长actual_seq_lengths_key/kv
    # 对应的block数量.
    _need(bt is not None, op, "layout PA_BSND needs block_table")
    _dtype(bt, (torch.int32,), op, "block_table")
    _need(bt.dim() == 2 and bt.shape[0] == batches, op,
          f"block_table must be 2-D with B={batches} rows, got {tuple(bt.shape)}")
    _contig(bt, op, "block_table")
    # [LI-MD]/[SFA-MD] actual_seq_lengths_key/kv: layout为PA_BSND时必须传入, 长度为B, 不小于0.
    _need(a[lens_name] is not None, op, f"layout PA_BSND needs {lens_name}")
    kv = _lengths(op, lens_name, a[lens_name], f"B={batches}")
    _need(len(kv) == batches and all(v >= 0 for v in kv), op,
          f"{lens_name} must hold B={batches} non-negative key lengths, got {kv}")
    need = -(-max(kv, default=0) // bs)
    _need(bt.shape[1] >= need, op, f"block_table has {bt.shape[1]} columns, fewer than the {need} blocks of "
          f"the longest {lens_name}")


def lightning_indexer(a: dict, op="npu_lightning_indexer") -> None:
    q, k, w = a["query"], a["key"], a["weights"]
    lq, lk = a["layout_query"], a["layout_key"]
    # [LI-MD] layout_query: BSND、TND; layout_key: PA_BSND、BSND、TND, 非PageAttention时与layout_query一致.
    _need(lq in ("BSND", "TND"), op, f"layout_query must be BSND or TND, got {lq!r}")
    _need(lk in ("PA_BSND", "BSND", "TND"), op, f"layout_key must be PA_BSND, BSND or TND, got {lk!r}")
    _need(lk == "PA_BSND" or lk == lq, op, "without PageAttention layout_key must equal layout_query")
    # [LI-MD] query/key: bfloat16、float16, 一致; weights: bfloat16、float16、float32, 不为float32时与query一致.
    _dtype(q, HALF, op, "query")
    _need(k.dtype == q.dtype, op, "key must have query's dtype")
    _dtype(w, (*HALF, torch.float32), op, "weights")
    _need(w.dtype in (q.dtype, torch.float32), op, "weights must be float32 or query's dtype")
    # [LI-MD] query、weights 不支持非连续; A2/A3: key不支持非连续.
    for name in ("query", "key", "weights"):
        _contig(a[name], op, name)
    _need(q.dim() == (3 if lq == "TND" else 4), op,
          f"query must be {'[T1, N1, D]' if lq == 'TND' else '[B, S1, N1, D]'} for layout_query {lq}")
    n1, d = q.shape[-2], q.shape[-1]
    # [LI-MD] 约束说明: query中的D和key中的D值相等为128; A2/A3: query中的N必须小于等于64.
    _need(d == 128 and k.shape[-1] == 128, op, f"query and key head dim must be 128, got {d} / {k.shape[-1]}")
    _need(1 <= n1 <= 64, op, f"query heads (N1) must be <= 64 on Atlas A2/A3, got {n1}")
    # [LI-MD] weights: shape [B, S1, N1] or [T, N1].
    _need(tuple(w.shape) == tuple(q.shape[:-1]), op,
          f"weights must be {tuple(q.shape[:-1])} (query without D), got {tuple(w.shape)}")
    # [LI-MD] sparse_count, sparse_mode (0/3), pre/next_tokens (default only).
    _need(a["sparse_count"] in LI_SPARSE_COUNTS, op,
          f"sparse_count must be in [1, 2048] or one of 3072..8192 (step 1024), got {a['sparse_count']}")
    _need(a["sparse_mode"] in (0, 3), op, f"sparse_mode must be 0 or 3, got {a['sparse_mode']}")
    _need(a["pre_tokens"] == DEFAULT_TOKENS and a["next_tokens"] == DEFAULT_TOKENS, op,
          "pre_tokens / next_tokens support only their default 2**63-1")
    # [LI-MD] return_value: 仅在训练且layout_key不为PA_BSND场景下支持.
    _need(not (a["return_value"] and lk == "PA_BSND"), op, "return_value=True is not supported with PA_BSND")
    if lq == "TND":
        batches = len(_query_ends(op, a["actual_seq_lengths_query"], q))
    else:
        batches = q.shape[0]
        if a["actual_seq_lengths_query"] is not None:
            _lengths(op, "actual_seq_lengths_query", a["actual_seq_lengths_query"], f"B={batches}")
    if lk == "PA_BSND":
        _paged(op, a, k, "key", "actual_seq_lengths_key", batches)
    else:
        # [LI-MD] key: N2仅支持1
        _need(k.shape[-2] == 1, op, f"key must have one head (N2 = 1), got {k.shape[-2]}")


def sparse_flash_attention(a: dict, op="npu_sparse_flash_attention") -> None:
    q, k, v, idx = a["query"], a["key"], a["value"], a["sparse_indices"]
    qr, kr = a["query_rope"], a["key_rope"]
    lq, lkv = a["layout_query"], a["layout_kv"]
    # [SFA-MD] attention_mode: 仅支持传入2 (MLA-absorb); [SFA-TILING] "attentionMode only support 2".
    # The schema's default is 0, so a call must pass it.
    _need(a["attention_mode"] == 2, op, f"attention_mode must be 2 (MLA-absorb; the schema default 0 is "
          f"refused), got {a['attention_mode']}")
    # [SFA-MD]/[SFA-SRC] layout_query BSND/TND; layout_kv TND/BSND/PA_BSND, 非PA_BSND时与layout_query一致.
    _need(lq in ("BSND", "TND"), op, f"layout_query must be BSND or TND, got {lq!r}")
    _need(lkv in ("PA_BSND", "BSND", "TND"), op, f"layout_kv must be PA_BSND, BSND or TND, got {lkv!r}")
    _need(lkv == "PA_BSND" or lkv == lq, op, "without PageAttention layout_kv must equal layout_query")
    # [SFA-MD] query/key/value: bfloat16、float16, 一致; query_rope/key_rope: bfloat16、float16.
    _dtype(q, HALF, op, "query")
    _need(k.dtype == q.dtype and v is not None and v.dtype == q.dtype, op, "key and value must have query's dtype")
    # [SFA-TILING] queryRope and keyRope both or neither; MLA (attentionMode 2) needs them.
    _need(qr is not None and kr is not None, op, "attention_mode=2 needs query_rope and key_rope")
    _need(qr.dtype == q.dtype and kr.dtype == q.dtype, op, "query_rope/key_rope must have query's dtype")
    # [SFA-MD] query/sparse_indices/query_rope 不支持非连续; A2/A3: key、value和key_rope不支持非连续.
    for name in ("query", "key", "value", "sparse_indices", "query_rope", "key_rope"):
        _contig(a[name], op, name)
    _need(q.dim() == (3 if lq == "TND" else 4), op,
          f"query must be {'[T1, N1, D]' if lq == 'TND' else '[B, S1, N1, D]'} for layout_query {lq}")
    n1 = q.shape[-2]
    # [SFA-MD] 约束说明: query、key、value的D为512, query_rope、key_rope的D为64.
    _need(q.shape[-1] == 512 and k.shape[-1] == 512 and v.shape[-1] == 512, op,
          f"query/key/value head dim must be 512, got {q.shape[-1]}/{k.shape[-1]}/{v.shape[-1]}")
    _need(qr.shape[-1] == 64 and kr.shape[-1] == 64, op,
          f"query_rope/key_rope head dim must be 64, got {qr.shape[-1]}/{kr.shape[-1]}")
    _need(tuple(qr.shape[:-1]) == tuple(q.shape[:-1]), op, "query_rope must match query except D")
    # [SFA-MD] A2/A3: Q_N支持1/2/4/8/16/32/64/128.
    _need(n1 in SFA_HEADS, op, f"query heads (N1) must be a power of two in [1, 128] on Atlas A2/A3, got {n1}")
    # [SFA-MD] value: shape与key一致.
    _need(tuple(v.shape) == tuple(k.shape), op, "value must have key's shape")
    # [SFA-MD] sparse_indices: int32; TND [Q_T, KV_N, sparse_size] / BSND [B, Q_S, KV_N, sparse_size],
    # sparse_size > 0.
    _dtype(idx, (torch.int32,), op, "sparse_indices")
    want = q.dim()
    _need(idx.dim() == want and tuple(idx.shape[:want - 2]) == tuple(q.shape[:want - 2])
          and idx.shape[-2] == 1 and idx.shape[-1] > 0, op,
          f"sparse_indices must be [{'Q_T' if lq == 'TND' else 'B, Q_S'}, KV_N=1, sparse_size>0] matching "
          f"query, got {tuple(idx.shape)}")
    # [SFA-MD] sparse_block_size: [1, 128], 2的幂次方; PageAttention时整除block_size.
    sbs = a["sparse_block_size"]
    _need(1 <= sbs <= 128 and sbs & (sbs - 1) == 0, op,
          f"sparse_block_size must be a power of two in [1, 128], got {sbs}")
    # [SFA-MD]/[SFA-TILING] sparse_mode 0/3; pre/next_tokens only the default.
    _need(a["sparse_mode"] in (0, 3), op, f"sparse_mode must be 0 or 3, got {a['sparse_mode']}")
    _need(a["pre_tokens"] == DEFAULT_TOKENS and a["next_tokens"] == DEFAULT_TOKENS, op,
          "pre_tokens / next_tokens support only their default 2**63-1")
    # [SFA-MD] return_softmax_lse: 仅在训练且layout_kv不为PA_BSND场景支持; A2/A3: 不支持sinks.
    _need(not (a["return_softmax_lse"] and lkv == "PA_BSND"), op,
          "return_softmax_lse=True is not supported with PA_BSND")
    _need(a["sinks"] is None, op, "sinks are not supported on Atlas A2/A3")
    if lq == "TND":
        batches = len(_query_ends(op, a["actual_seq_lengths_query"], q))
    else:
        batches = q.shape[0]
    if lkv == "PA_BSND":
        _paged(op, a, k, "key", "actual_seq_lengths_kv", batches)
        _need(kr.dim() == 4 and tuple(kr.shape[:3]) == tuple(k.shape[:3]), op,
              "key_rope must be [block_num, block_size, 1, 64] with key's blocks")
        _need(k.shape[1] % sbs == 0, op, f"sparse_block_size {sbs} must divide block_size {k.shape[1]}")
    else:
        # [SFA-TILING] kv_head_num should be 1
        _need(k.shape[-2] == 1, op, f"key must have one head (KV_N = 1), got {k.shape[-2]}")


SPARSE_RULES = {
    "npu_lightning_indexer": lightning_indexer,
    "npu_sparse_flash_attention": sparse_flash_attention,
}
