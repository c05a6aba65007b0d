# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Documented constraints of the core simulated operators; a violation raises
``SimulatedNpuError("<operator>: <rule>")`` before the kernel runs.

Sources (each rule cites one):

* [PLUGIN] ``torch_npu/_op_plugin_docs.py`` in the torch-npu 2.13.0 wheel (the operator
  docstrings op-plugin publishes; section named per rule).
* [FIA-MD] Ascend/op-plugin ``docs/zh/custom_APIs/torch_npu/torch_npu-npu_fused_infer_attention_score.md``
  @517f2e7 (section "MLA约束"): the operator's current reference page.
* [ATB-CACHE] CANN ATB ``ReshapeAndCacheOperation`` reference (hiascend.com, ascendtb_01_0073):
  key/value [num_tokens, num_heads, head_size], caches [num_blocks, block_size, num_heads,
  head_size], one dtype of float16/bfloat16/int8, slotMapping int32.
* Rotary-embedding rules (``_npu_rotary_embedding``, ``npu_mrope``) and their sources are in
  ``constraints.rope``.
* [ATB-TENSOR] ATB operators receive ``atb::Tensor`` descriptors (data pointer + shape, no
  strides; built in op-plugin ``op_plugin/utils/custom_functions/atb/AtbCommon.h``), so a
  non-contiguous tensor would be read as if it were contiguous: the simulator refuses it.

Rules the simulator does not enforce are listed in ``NOT_ENFORCED`` with the reason.
"""

from __future__ import annotations

import torch

from ascend_ops.simulator.constraints.base import HALF, _contig, _dtype, _need
from ascend_ops.simulator.errors import SimulatedNpuError

#: FIA ``input_layout`` -> (query layout, attention_out layout). [PLUGIN] input_layout lists
#: BSH/BSND/BNSD/BNSD_BSND/TND; [FIA-SRC] FusedInferAttentionScoreKernelNpuOpApi.cpp@517f2e7:41-89
#: (get_query_and_attention_out_layout, LAYOUT_MAP) also accepts BNSD_NBSD and TND_NTD, the
#: second half naming the output layout (infer_attention_out_shape, 209-280: NBSD = [N, B, S,
#: D_v], NTD = [N, T, D_v]); vllm-ascend's MLA decode passes both (vllm_ascend/attention/
#: mla_v1.py@f92eadf:1152-1289). Other LAYOUT_MAP entries are not simulated.
FIA_LAYOUT_SPLIT = {
    "BSH": ("BSH", "BSH"), "BSND": ("BSND", "BSND"), "BNSD": ("BNSD", "BNSD"),
    "BNSD_BSND": ("BNSD", "BSND"), "TND": ("TND", "TND"),
    "BNSD_NBSD": ("BNSD", "NBSD"), "TND_NTD": ("TND", "NTD"),
}
FIA_LAYOUTS = tuple(FIA_LAYOUT_SPLIT)

NOT_ENFORCED = {
    "npu_fused_infer_attention_score": (
        "[PLUGIN] 'page attention: block_size >= 128 and a multiple of 128' for Q_S > 1: the "
        "Q_S = 1 rule (multiple of 16, <= 512) is enforced for every query length, matching the "
        "platform's block-size check; int8/int4 quantized inputs are not modelled (refused). "
        "MLA: [PLUGIN]'s 'query S 1-16' (the .md [FIA-MD] drops it) and [FIA-MD]'s D=512 block_size "
        "'multiple of 16, <= 1024' (the general <= 512 rule is kept). Unpaged TND: [PLUGIN]'s "
        "'TND场景下query、key、value输入的综合限制' (N 8/16/32/64/128, Q_D = K_D = 192, bfloat16 "
        "only): vllm-ascend's vision-encoder attention runs unpaged TND with head dim 128 (80 and "
        "72 padded) in the model's dtype on A2/A3 (vllm_ascend/ops/mm_encoder_attention.py@182b75e), "
        "so that paragraph describes another kernel path; the general rules apply."
    ),
}


def rms_norm(a: dict, op="npu_rms_norm") -> None:
    # [PLUGIN] npu_rms_norm 约束说明: 输入数据类型仅支持float16、bfloat16和float32; gamma dtype = self.
    _dtype(a["self"], (*HALF, torch.float32), op, "self")
    _need(a["gamma"].dtype == a["self"].dtype, op, "gamma must have self's dtype")


def add_rms_norm(a: dict, op="npu_add_rms_norm") -> None:
    # [PLUGIN] npu_add_rms_norm follows npu_rms_norm: float16/bfloat16/float32, x1/x2/gamma one dtype.
    _dtype(a["x1"], (*HALF, torch.float32), op, "x1")
    _need(a["x2"].dtype == a["x1"].dtype and a["gamma"].dtype == a["x1"].dtype, op,
          "x1, x2 and gamma must share one dtype")


def swiglu(a: dict, op="npu_swiglu") -> None:
    # [PLUGIN] npu_swiglu: output = A * sigmoid(A) * B with A, B the two halves along dim, so the
    # size of dim must be even. dtypes float16/bfloat16/float32 (op-plugin SwiGlu kernel).
    x, dim = a["self"], a["dim"]
    _dtype(x, (*HALF, torch.float32), op, "self")
    _need(x.shape[dim] % 2 == 0, op, f"self.shape[{dim}] must be even (split into two halves)")


def reshape_and_cache(a: dict, op="_npu_reshape_and_cache") -> None:
    # [ATB-CACHE] slotMapping int32; key/value/caches one dtype of float16/bfloat16/int8.
    _dtype(a["slot_indices"], (torch.int32,), op, "slot_indices")
    _dtype(a["key"], (*HALF, torch.int8), op, "key")
    for name in ("value", "key_cache", "value_cache"):
        if name in a:
            _need(a[name].dtype == a["key"].dtype, op, f"{name} must have key's dtype")
    # [ATB-CACHE] key [num_tokens, num_heads, head_size]; cache [num_blocks, block_size, heads, head_size].
    _need(a["key"].dim() == 3, op, "key must be [num_tokens, num_heads, head_size]")
    _need(a["key_cache"].dim() == 4, op, "key_cache must be [num_blocks, block_size, num_heads, head_size]")
    # [ATB-TENSOR] every operand, the in/out caches included, is passed by pointer + shape.
    for name in ("key", "value", "key_cache", "value_cache", "slot_indices"):
        if name in a:
            _contig(a[name], op, name)


def reshape_and_cache_siso(a: dict) -> None:
    reshape_and_cache(a, "_npu_reshape_and_cache_siso")


def _fia_batches(a: dict, layout: str, q: torch.Tensor) -> int:
    layout = FIA_LAYOUT_SPLIT[layout][0]
    if layout == "TND":
        return len(a["actual_seq_lengths"] or [])
    return q.shape[0]


def _max_query_len(a: dict, layout: str, q: torch.Tensor) -> int:
    layout = FIA_LAYOUT_SPLIT[layout][0]
    if layout == "TND":
        ends = list(a["actual_seq_lengths"] or [q.shape[0]])
        return max((e - s for s, e in zip([0, *ends[:-1]], ends, strict=True)), default=0)
    return q.shape[2] if layout == "BNSD" else q.shape[1]


def fused_infer_attention(a: dict, op="npu_fused_infer_attention_score") -> None:
    q, k, v = a["query"], a["key"], a["value"]
    layout = a["input_layout"]
    # [PLUGIN] input_layout: 支持BSH、BSND、BNSD、BNSD_BSND、TND; [FIA-SRC] adds BNSD_NBSD, TND_NTD
    # (FIA_LAYOUT_SPLIT). The rules below read the query layout (the first half).
    _need(layout in FIA_LAYOUTS, op, f"input_layout must be one of {FIA_LAYOUTS}, got {layout!r}")
    qlay = FIA_LAYOUT_SPLIT[layout][0]
    # [PLUGIN] query 数据类型支持float16、bfloat16、int8 (int8 quantization is not simulated).
    _dtype(q, HALF, op, "query")
    # [PLUGIN] page attention: 支持key、value数据类型为float16、bfloat16、int8; no mixed float types.
    _need(k.dtype == q.dtype and v.dtype == q.dtype, op, "key and value must have query's dtype")
    # [PLUGIN] query/key/value/atten_mask/query_rope/key_rope: 不支持非连续的Tensor.
    for name in ("query", "key", "value", "atten_mask", "query_rope", "key_rope"):
        _contig(a[name], op, name)
    n = a["num_heads"]
    qn = {"TND": 1, "BSND": 2, "BNSD": 1}.get(qlay)
    if qn is not None:
        # [PLUGIN] num_heads: 需要与shape中的query的N轴shape值相同.
        _need(q.dim() == (3 if qlay == "TND" else 4) and q.shape[qn] == n, op,
              f"num_heads={n} must equal query's N axis for layout {layout} (query shape {tuple(q.shape)})")
    nkv = a["num_key_value_heads"] or n
    # [PLUGIN] num_key_value_heads: num_heads整除num_key_value_heads, 比值不能大于64. Not for MLA
    # (query_rope given): [FIA-MD] MLA约束 allows query N up to 128 with key N = 1 (_mla).
    _need(n % nkv == 0 and (n // nkv <= 64 or a["query_rope"] is not None), op,
          f"num_heads ({n}) must be a multiple of num_key_value_heads ({nkv}) with ratio <= 64")
    # [PLUGIN] 当Q_S大于1时: 支持N轴小于等于256, 支持D轴小于等于512.
    d = q.shape[-1] if qlay != "BSH" else q.shape[-1] // n
    _need(n <= 256 and d <= 512, op, f"num_heads must be <= 256 and head dim <= 512 (got {n}, {d})")
    if _max_query_len(a, layout, q) > 1:
        # [PLUGIN] 当Q_S大于1时: 输入类型全为float16、bfloat16时, D轴需16对齐.
        _need(d % 16 == 0, op, f"head dim {d} must be a multiple of 16 when a query has more than one token")
    mode = a["sparse_mode"]
    # [PLUGIN] sparse_mode: 当前仅支持取值0、1、2、3、4、9.
    _need(mode in (0, 1, 2, 3, 4, 9), op, f"sparse_mode must be 0, 1, 2, 3, 4 or 9, got {mode}")
    mask = a["atten_mask"]
    if mask is not None:
        # [PLUGIN] atten_mask: 数据类型支持bool、int8和uint8.
        _dtype(mask, (torch.bool, torch.int8, torch.uint8), op, "atten_mask")
    if mode in (2, 3, 4):
        # [PLUGIN] sparse_mode=2、3、4时, atten_mask的shape需要为(S, S)或(1, S, S)或(1, 1, S, S), S固定为2048.
        _need(mask is not None and tuple(mask.shape[-2:]) == (2048, 2048) and mask.numel() == 2048 * 2048,
              op, f"sparse_mode={mode} needs the optimized 2048x2048 atten_mask")
    if qlay == "TND":
        lens = a["actual_seq_lengths"]
        # [PLUGIN] actual_seq_lengths: 当query的input_layout为TND时, 该入参必须传入; 后一个元素的值
        # 必须大于等于前一个元素的值, 且不能出现负值.
        _need(lens is not None and len(lens) > 0, op, "input_layout='TND' needs actual_seq_lengths")
        _need(all(x >= 0 for x in lens) and all(b >= a_ for a_, b in zip(lens, lens[1:], strict=False)), op,
              "actual_seq_lengths must be non-negative and non-decreasing (cumulative query ends)")
        _need(lens[-1] == q.shape[0], op, f"actual_seq_lengths[-1] ({lens[-1]}) must equal T ({q.shape[0]})")
    qr, kr = a["query_rope"], a["key_rope"]
    # [PLUGIN] query_rope和key_rope要求同时配置或同时不配置; 数据类型与query/key一致.
    _need((qr is None) == (kr is None), op, "query_rope and key_rope must be given together")
    if qr is not None:
        _need(qr.dtype == q.dtype and kr.dtype == k.dtype, op, "query_rope/key_rope must have query/key's dtype")
        _mla(a, op, d, n, nkv, qr.shape[-1] // (n if qlay == "BSH" else 1),
             kr.shape[-1] // (nkv if kr.dim() == 3 else 1))
    bt = a["block_table"]
    if bt is not None:
        _page_attention(a, op, q, k, layout, n, nkv)
    elif qr is not None:
        # [PLUGIN] query_rope 约束 (sparse不为4): 必须开启PageAttention.
        raise SimulatedNpuError(f"{op}: query_rope/key_rope (MLA) need page attention (block_table)")
    elif qlay == "TND":
        _unpaged_tnd(a, op, q, k, v, nkv)


def _unpaged_tnd(a, op, q, k, v, nkv) -> None:
    """TND query with packed (unpaged) key/value [T_kv, KV_N, D]: vllm-ascend's vision-encoder
    call (vllm_ascend/ops/mm_encoder_attention.py@182b75e)."""
    # [PLUGIN] 参数key、value中对应tensor的shape需要完全一致.
    _need(k.dim() == 3 and tuple(k.shape) == tuple(v.shape), op,
          f"unpaged TND key and value must be 3-D [T_kv, KV_N, D] of one shape, got "
          f"{tuple(k.shape)} / {tuple(v.shape)}")
    _need(k.shape[1] == nkv, op, f"num_key_value_heads={nkv} must equal key's N axis ({k.shape[1]})")
    _need(k.shape[2] == q.shape[2], op, f"key head dim {k.shape[2]} must equal query's {q.shape[2]}")
    kv = a["actual_seq_lengths_kv"]
    # [PLUGIN] actual_seq_lengths_kv: 当input_layout为TND时, 该入参必须传入, 在非PA场景下, 第b个值
    # 表示前b个Batch的S轴累加长度, 其值应递增排列, 且该入参元素的数量代表总Batch数.
    _need(kv is not None and len(kv) == len(a["actual_seq_lengths"] or []), op,
          "unpaged TND needs actual_seq_lengths_kv with one cumulative end per batch "
          "(as many entries as actual_seq_lengths)")
    _need(all(x >= 0 for x in kv) and all(b >= a_ for a_, b in zip(kv, kv[1:], strict=False)), op,
          "actual_seq_lengths_kv must be non-negative and non-decreasing (cumulative key ends)")
    _need(kv[-1] <= k.shape[0], op, f"actual_seq_lengths_kv[-1] ({kv[-1]}) exceeds key's T ({k.shape[0]})")


#: query head counts FIA's MLA path (query_rope/key_rope, D = 512) accepts
MLA_HEADS = (1, 2, 4, 8, 16, 32, 64, 128)


def _mla(a, op, d, n, nkv, qr_d, kr_d) -> None:
    # [FIA-MD] MLA约束: query的D仅支持512或128; query_rope/key_rope shape中D=64.
    _need(d in (512, 128), op, f"MLA (query_rope/key_rope): query head dim must be 512 or 128, got {d}")
    _need(qr_d == 64 and kr_d == 64, op, f"MLA: query_rope/key_rope head dim must be 64, got {qr_d}/{kr_d}")
    if d == 512:
        # [FIA-MD] D = 512时: query的N为1/2/4/8/16/32/64/128; key的N=1; 不支持softmax_lse. The
        # wheel's docstring ([PLUGIN]: N 32/64/128) is older and narrower; vllm-ascend runs
        # DeepSeek-V2-Lite (16 heads) on one card (tests/e2e/pull_request/one_card/
        # model_runner_v2/test_basic.py@182b75e) and pads other counts to the next power of
        # two (vllm_ascend/attention/mla_v1.py@182b75e:749-753), so [FIA-MD] wins.
        _need(n in MLA_HEADS, op, f"MLA with a 512-wide latent: num_heads must be a power of two in "
              f"[1, 128], got {n} (pad the query heads with zeros, as vllm-ascend does)")
        _need(nkv == 1, op, f"MLA with a 512-wide latent: num_key_value_heads must be 1, got {nkv}")
        _need(not a["softmax_lse_flag"], op, "MLA with a 512-wide latent does not support softmax_lse_flag=True")


# [FIA-SRC] Ascend/op-plugin op_plugin/ops/opapi/FusedInferAttentionScoreKernelNpuOpApi.cpp@517f2e7
# (npu_fused_infer_attention_score_out_symint, 446-549): with ``workspace`` the launch uses that
# buffer (EXEC_UPDATE_NPU_NO_FORMAT_CHECK_CMD); without it, and always in the functional overload,
# EXEC_NPU_NO_FORMAT_CHECK_CMD allocates a workspace per call (op_plugin/utils/op_api_common.h@517f2e7,
# ``unsafe_empty_workspace``) that is freed when the call returns, so a captured task (or its
# update) would keep a pointer into memory the pool hands out again. vllm-ascend passes the
# ``_npu_fused_infer_attention_score_get_max_workspace`` tensor to every captured or updated call
# (vllm_ascend/attention/attention_v1.py@182b75e:966-1087, 802-913).
GRAPH_WORKSPACE_OPS = ("npu_fused_infer_attention_score",)


def check_graph_workspace(func, args, kwargs) -> None:
    """Refuse an FIA call captured into a graph task group, or re-issued in a graph task update,
    that would allocate its own workspace (functional overload, or ``.out`` with
    ``workspace=None``). ``func`` is the dispatched OpOverload; other ops pass."""
    if getattr(func, "namespace", None) != "npu":
        return
    base, overload = func._schema.name.split("::", 1)[1], func._overloadname
    if base not in GRAPH_WORKSPACE_OPS:
        return
    op = f"{base}.{overload}" if overload != "default" else base
    names = [x.name for x in func._schema.arguments]
    workspace = kwargs.get("workspace", args[names.index("workspace")] if "workspace" in names
                           and names.index("workspace") < len(args) else None)
    if "workspace" not in names or workspace is None:
        raise SimulatedNpuError(
            f"{op}: a call captured in a graph task group (or re-issued in a task update) needs "
            "workspace= (the .out overload with _npu_fused_infer_attention_score_get_max_workspace's "
            "tensor); without it the operator allocates a per-call workspace that is freed after the "
            "call (op-plugin FusedInferAttentionScoreKernelNpuOpApi.cpp / op_api_common.h)")


def _page_attention(a, op, q, k, layout, n, nkv) -> None:
    bt, bs = a["block_table"], a["block_size"]
    # [PLUGIN] block_table: 数据类型支持int32; page attention场景下, block_table必须为二维.
    _dtype(bt, (torch.int32,), op, "block_table")
    _need(bt.dim() == 2, op, "block_table must be 2-D [batch, max_blocks_per_seq]")
    _contig(bt, op, "block_table")
    # [PLUGIN] (Q_S=1) block_size需要传入非0值, 最大不超过512, float16/bfloat16时需要16对齐.
    _need(bs > 0 and bs % 16 == 0 and bs <= 512, op, f"block_size must be a multiple of 16 in [16, 512], got {bs}")
    # [PLUGIN] page attention场景下, 必须传入actual_seq_lengths_kv.
    kv = a["actual_seq_lengths_kv"]
    _need(kv is not None, op, "page attention (block_table) needs actual_seq_lengths_kv")
    batches = _fia_batches(a, layout, q)
    # [PLUGIN] block_table 第一维长度需等于B, 第二维长度不能小于maxBlockNumPerSeq.
    _need(bt.shape[0] == batches, op, f"block_table has {bt.shape[0]} rows for {batches} batches")
    _need(len(kv) in (1, batches) or len(kv) >= batches, op, "actual_seq_lengths_kv must have one entry per batch")
    need_blocks = -(-max(kv[:batches] or [0]) // bs)
    _need(bt.shape[1] >= need_blocks, op,
          f"block_table has {bt.shape[1]} columns, fewer than the {need_blocks} blocks of the longest sequence")
    # [PLUGIN] kv cache排布: (blocknum, blocksize, H) or, for BNSD/TND queries, (blocknum, KV_N, blocksize, D).
    if k.dim() == 3:
        _need(k.shape[1] == bs, op, f"key cache [num_blocks, block_size, H] has block size {k.shape[1]} != {bs}")
    else:
        _need(k.dim() == 4 and FIA_LAYOUT_SPLIT[layout][0] in ("BNSD", "TND") and k.shape[1] == nkv
              and k.shape[2] == bs,
              op, "key cache must be [num_blocks, block_size, KV_N*D] or, for BNSD/TND queries, "
              "[num_blocks, KV_N, block_size, D]")


def moe_gating_top_k(a: dict, op="npu_moe_gating_top_k") -> None:
    x = a["x"]
    # [PLUGIN] npu_moe_gating_top_k x: 2D, float16/bfloat16/float32, 专家数不大于2048.
    _need(x.dim() == 2, op, "x must be 2-D [num_tokens, num_experts]")
    _dtype(x, (*HALF, torch.float32), op, "x")
    _need(x.shape[-1] <= 2048, op, f"the expert count (x.shape[-1]={x.shape[-1]}) must be <= 2048")
    if a["bias"] is not None:
        # [PLUGIN] bias: 1D, shape与x的最后一维相等, 数据类型需要与x保持一致.
        _need(a["bias"].dtype == x.dtype and tuple(a["bias"].shape) == (x.shape[-1],), op,
              "bias must be 1-D [num_experts] in x's dtype")
    gc, kg, k = a["group_count"], a["k_group"], a["k"]
    # [PLUGIN] group_count > 0, x_shape[-1]能够被group_count整除; 1 <= k_group <= group_count;
    # 1 <= k <= x_shape[-1] / group_count * k_group; renorm 当前仅支持0.
    _need(gc > 0 and x.shape[-1] % gc == 0, op, "group_count must divide the expert count")
    # [PLUGIN] 整除后的结果大于2, 并且整除的结果按照32个数对齐后乘group_count的结果不大于2048.
    per = x.shape[-1] // gc
    if gc > 1:
        _need(per > 2, op, f"each expert group must hold more than 2 experts (got {per})")
    _need(-(-per // 32) * 32 * gc <= 2048, op, "group size rounded up to 32, times group_count, must be <= 2048")
    _need(1 <= kg <= gc, op, "k_group must be in [1, group_count]")
    _need(1 <= k <= x.shape[-1] // gc * kg, op, "k must be in [1, experts / group_count * k_group]")
    _need(a["renorm"] == 0, op, "renorm must be 0 (the only supported value)")


def moe_init_routing(a: dict, op="npu_moe_init_routing") -> None:
    # [PLUGIN] npu_moe_init_routing: x 2D float16/bfloat16/float32; row_idx/expert_idx int32, same shape.
    _dtype(a["x"], (*HALF, torch.float32), op, "x")
    _need(a["x"].dim() == 2, op, "x must be 2-D [num_rows, hidden]")
    _dtype(a["row_idx"], (torch.int32,), op, "row_idx")
    _dtype(a["expert_idx"], (torch.int32,), op, "expert_idx")
    _need(a["row_idx"].shape == a["expert_idx"].shape and a["expert_idx"].dim() == 2, op,
          "row_idx and expert_idx must both be [num_rows, k]")


def moe_finalize_routing(a: dict, op="npu_moe_finalize_routing") -> None:
    rows = a["expanded_permuted_rows"]
    # [PLUGIN] npu_moe_finalize_routing: expanded_permuted_rows 2D float16/bfloat16/float32;
    # skip1/skip2/bias/scales 数据类型要求与expanded_permuted_rows一致; index tensors int32;
    # skip2参数为None时, skip1参数必须也为None (as documented).
    _dtype(rows, (*HALF, torch.float32), op, "expanded_permuted_rows")
    for name in ("skip1", "skip2", "bias", "scales"):
        if a[name] is not None:
            _need(a[name].dtype == rows.dtype, op, f"{name} must have expanded_permuted_rows' dtype")
    _dtype(a["expanded_src_to_dst_row"], (torch.int32,), op, "expanded_src_to_dst_row")
    if a["export_for_source_row"] is not None:
        _dtype(a["export_for_source_row"], (torch.int32,), op, "export_for_source_row")


def grouped_matmul(a: dict, op="npu_grouped_matmul") -> None:
    gl = a["group_list"]
    # [PLUGIN] npu_grouped_matmul group_list: 数据类型支持torch.int64.
    if isinstance(gl, torch.Tensor):
        _need(gl.dtype == torch.int64, op, "group_list must be an int64 tensor")
    for x in a["x"]:
        _dtype(x, (*HALF, torch.float32), op, "x")
    for w in a["weight"]:
        _need(w.dtype == a["x"][0].dtype, op, "weight must have x's dtype")


def batch_gather_matmul(a: dict, op="npu_batch_gather_matmul") -> None:
    # [PLUGIN] npu_batch_gather_matmul 参数说明: self/x/weight_a/weight_b float16; self [batch,
    # y_column]; x [batch, H1], H1 % 16 == 0; weight_b [W, L, H2, R] (H2 % 16 == 0, H2 within
    # y_column; [W, L, H2, H1] without weight_a); weight_a [W, L, R, H1] with R % 16 == 0 in
    # [16, 128]; indices int32 [batch]; layer_idx < L; y_offset < y_column; no empty tensors.
    y, x, wb, wa, idx = a["self"], a["x"], a["weight_b"], a["weight_a"], a["indices"]
    for name in ("self", "x", "weight_b") + (("weight_a",) if wa is not None else ()):
        _dtype(a[name], (torch.float16,), op, name)
    _dtype(idx, (torch.int32,), op, "indices")
    _need(y.dim() == 2 and x.dim() == 2 and wb.dim() == 4 and idx.dim() == 1, op,
          "self and x must be 2-D, weight_b 4-D [W, L, H2, R], indices 1-D")
    _need(x.numel() > 0 and y.numel() > 0, op, "empty tensors are not supported")
    _need(y.shape[0] == x.shape[0] == idx.shape[0], op, "self, x and indices must share dim 0 (batch)")
    _need(x.shape[1] % 16 == 0, op, "x.shape[1] (H1) must be a multiple of 16")
    w, layers, h2, k = wb.shape
    _need(h2 % 16 == 0, op, "weight_b.shape[2] (H2) must be a multiple of 16")
    if wa is None:
        _need(k == x.shape[1], op, "without weight_a, weight_b must be [W, L, H2, H1]")
    else:
        _need(wa.dim() == 4 and tuple(wa.shape[:2]) == (w, layers), op,
              "weight_a must be 4-D [W, L, R, H1] with weight_b's W and L")
        r = wa.shape[2]
        _need(r == k, op, "weight_a.shape[2] and weight_b.shape[3] (R) must be equal")
        _need(r % 16 == 0 and 16 <= r <= 128, op, "R must be a multiple of 16 in [16, 128]")
        _need(wa.shape[3] == x.shape[1], op, "weight_a.shape[3] must equal x.shape[1] (H1)")
    _need(0 <= a["layer_idx"] < layers, op, "layer_idx must be < weight_b.shape[1] (L)")
    size = y.shape[1] if a["y_slice_size"] == -1 else a["y_slice_size"]
    _need(0 <= a["y_offset"] < y.shape[1], op, "y_offset must be < self.shape[1] (y_column)")
    _need(a["y_offset"] + size <= y.shape[1] and size <= h2, op,
          "y_offset + y_slice_size must stay within self's columns and y_slice_size <= H2")


RULES = {
    "npu_rms_norm": rms_norm,
    "npu_add_rms_norm": add_rms_norm,
    "npu_swiglu": swiglu,
    "_npu_reshape_and_cache": reshape_and_cache,
    "_npu_reshape_and_cache_siso": reshape_and_cache_siso,
    "npu_fused_infer_attention_score": fused_infer_attention,
    # [PLUGIN] _npu_fused_infer_attention_score_get_max_workspace: 输入与npu_fused_infer_attention_score一致
    "_npu_fused_infer_attention_score_get_max_workspace": lambda a: fused_infer_attention(
        a, "_npu_fused_infer_attention_score_get_max_workspace"),
    "npu_moe_gating_top_k": moe_gating_top_k,
    "npu_moe_init_routing": moe_init_routing,
    "npu_moe_finalize_routing": moe_finalize_routing,
    "npu_grouped_matmul": grouped_matmul,
    "npu_batch_gather_matmul": batch_gather_matmul,
    "npu_batch_gather_matmul_": batch_gather_matmul,
}
