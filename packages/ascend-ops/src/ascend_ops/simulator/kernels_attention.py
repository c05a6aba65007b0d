# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Reference kernel of ``npu_fused_infer_attention_score`` (and its ``.out`` overload) over a
paged KV cache, written from the operator's documentation (``torch_npu/_op_plugin_docs.py``):

    attention_out = softmax(scale * (query . key^T [+ query_rope . key_rope^T]) + mask) . value

* ``input_layout`` names the query layout and, after ``_``, the output layout
  (``constraints.core.FIA_LAYOUT_SPLIT``, from op-plugin FusedInferAttentionScoreKernelNpuOpApi.cpp
  @517f2e7:41-89); query layouts TND [T, N, D] (``actual_seq_lengths`` = cumulative query ends),
  BSND [B, S, N, D], BNSD (also BNSD_BSND, BNSD_NBSD) [B, N, S, D], BSH [B, S, N*D]
  (``actual_seq_lengths`` = per-batch query lengths, optional), TND_NTD as TND;
* paged KV (``block_table`` int32 [B, max_blocks], ``block_size``, ``actual_seq_lengths_kv`` =
  per-batch KV lengths) with caches [num_blocks, block_size, KV_N*D] or [num_blocks, KV_N,
  block_size, D]; GQA: query head h reads KV head h // (N / KV_N);
* unpaged TND K/V (no ``block_table``; vllm-ascend's vision-encoder call,
  vllm_ascend/ops/mm_encoder_attention.py@182b75e): key/value [T_kv, KV_N, D], batch b's keys
  are rows ``actual_seq_lengths_kv[b-1]:actual_seq_lengths_kv[b]`` (cumulative ends);
* MLA: ``query_rope`` (query's layout, rope dim) and ``key_rope`` (the cache layout) add
  q_rope . k_rope to the scores; ``value`` is whatever is passed (vllm-ascend's MLA decode passes
  the latent "nope" cache as both key and value);
* ``sparse_mode`` 3 with the 2048x2048 mask = causal aligned bottom-right (query i of a request
  with q_len queries and kv_len keys sees keys j <= kv_len - q_len + i); ``sparse_mode`` 0 without
  a mask = no masking (pre_tokens / next_tokens unused). Other masks, unpaged KV in other
  layouts and quantization are not modelled.

Math in float32; the output has query's dtype and the output layout with the value head dim
D_v (op-plugin ...OpApi.cpp@517f2e7:209-280, infer_attention_out_shape): BSND [B, S, N, D_v],
BNSD [B, N, S, D_v], BSH [B, S, N*D_v], TND [T, N, D_v], NBSD [N, B, S, D_v], NTD [N, T, D_v].
``softmax_lse`` (float32, by the query layout, ibid. 282-299): (T, N, 1) for TND/TND_NTD,
(B, N, S, 1) otherwise, when ``softmax_lse_flag``; else a [1] zero tensor.
"""

from __future__ import annotations

import torch

from ascend_ops.simulator.constraints.core import FIA_LAYOUT_SPLIT

_UNMODELLED = (
    "pse_shift", "dequant_scale1", "quant_scale1", "dequant_scale2", "quant_scale2",
    "quant_offset2", "antiquant_scale", "antiquant_offset", "key_antiquant_scale",
    "key_antiquant_offset", "value_antiquant_scale", "value_antiquant_offset",
    "query_padding_size", "kv_padding_size", "key_shared_prefix", "value_shared_prefix",
    "actual_shared_prefix_len", "key_rope_antiquant_scale",
)


def _per_batch(lens, batches: int, default: int) -> list[int]:
    if lens is None:
        return [default] * batches
    lens = [int(x) for x in lens]
    return lens * batches if len(lens) == 1 else lens[:batches]


def _query_segments(q: torch.Tensor, layout: str, n: int, lens) -> list[torch.Tensor]:
    """Per-batch query rows as [q_len, N, D] views."""
    if layout == "TND":
        ends = [int(x) for x in lens]
        starts = [0, *ends[:-1]]
        return [q[s:e] for s, e in zip(starts, ends, strict=True)]
    if layout == "BSND":
        rows = q
    elif layout == "BNSD":
        rows = q.transpose(1, 2)
    else:  # BSH
        rows = q.view(q.shape[0], q.shape[1], n, -1)
    qlens = _per_batch(lens, rows.shape[0], rows.shape[1])
    return [rows[b, : qlens[b]] for b in range(rows.shape[0])]


def _cache_tokens(cache: torch.Tensor, nkv: int, block_size: int) -> torch.Tensor:
    """[num_blocks, block_size, KV_N, D] view of a paged cache in either documented layout."""
    if cache.dim() == 3:
        return cache.view(cache.shape[0], block_size, nkv, -1)
    return cache.transpose(1, 2)  # [nb, KV_N, bs, D] -> [nb, bs, KV_N, D]


def attention(query, key, value, **kw):
    """(attention_out, softmax_lse) of npu_fused_infer_attention_score; see module docstring."""
    for name in _UNMODELLED:
        if kw.get(name) is not None:
            raise NotImplementedError(f"{name} is not modelled by the simulator")
    bt = kw["block_table"]
    layout, n, scale = kw["input_layout"], kw["num_heads"], kw["scale"]
    if bt is None and FIA_LAYOUT_SPLIT[layout][0] != "TND":
        raise NotImplementedError("unpaged KV (no block_table) is modelled for TND only")
    nkv = kw["num_key_value_heads"] or n
    bs = kw["block_size"]
    mode, mask = kw["sparse_mode"], kw["atten_mask"]
    if mode == 3:
        causal = True
    elif mode == 0 and mask is None:
        causal = False
    else:
        raise NotImplementedError(f"sparse_mode={mode} with atten_mask={'set' if mask is not None else None}")
    layout, out_layout = FIA_LAYOUT_SPLIT[layout]
    qsegs = _query_segments(query, layout, n, kw["actual_seq_lengths"])
    qr, kr = kw["query_rope"], kw["key_rope"]
    rsegs = _query_segments(qr, layout, n, kw["actual_seq_lengths"]) if qr is not None else None
    group = n // nkv
    if bt is None:
        # unpaged TND K/V [T_kv, KV_N, D]: actual_seq_lengths_kv are cumulative ends, as the
        # query's ([PLUGIN] actual_seq_lengths_kv: 在非PA场景下, 第b个值表示前b个Batch的S轴累加长度)
        kv_ends = [int(x) for x in kw["actual_seq_lengths_kv"]]
        kv_starts = [0, *kv_ends[:-1]]
        kv_lens = [e - s0 for s0, e in zip(kv_starts, kv_ends, strict=True)]
        vc, krc = value, None
    else:
        kc = _cache_tokens(key, nkv, bs)
        vc = _cache_tokens(value, nkv, bs)
        krc = _cache_tokens(kr, nkv, bs) if kr is not None else None
        kv_lens = _per_batch(kw["actual_seq_lengths_kv"], len(qsegs), 0)
    outs, lses = [], []
    for b, qb in enumerate(qsegs):
        ql, kl = qb.shape[0], kv_lens[b]
        if bt is None:
            kb = key[kv_starts[b]: kv_ends[b]].float().repeat_interleave(group, 1)
            vb = value[kv_starts[b]: kv_ends[b]].float().repeat_interleave(group, 1)
        else:
            ids = bt[b, : -(-kl // bs)].long()
            kb = kc[ids].reshape(-1, nkv, kc.shape[-1])[:kl].float().repeat_interleave(group, 1)
            vb = vc[ids].reshape(-1, nkv, vc.shape[-1])[:kl].float().repeat_interleave(group, 1)
        s = torch.einsum("qhd,khd->hqk", qb.float(), kb)
        if rsegs is not None and krc is not None:  # both present exactly when rope keys are
            krb = krc[ids].reshape(-1, nkv, krc.shape[-1])[:kl].float().repeat_interleave(group, 1)
            s = s + torch.einsum("qhd,khd->hqk", rsegs[b].float(), krb)
        s = s * scale
        if causal and ql > 0 and kl > 0:
            i = torch.arange(ql).unsqueeze(1)
            j = torch.arange(kl).unsqueeze(0)
            s = s.masked_fill(j > kl - ql + i, float("-inf"))
        if kl == 0:  # documented: empty KV gives a zero output
            outs.append(torch.zeros(ql, n, vc.shape[-1]))
            lses.append(torch.full((n, ql), float("-inf")))
            continue
        lse = torch.logsumexp(s, -1)  # [N, q]
        p = torch.exp(s - lse.unsqueeze(-1)).nan_to_num(0.0)
        outs.append(torch.einsum("hqk,khd->qhd", p, vb))
        lses.append(lse)
    return _assemble(query, layout, out_layout, n, outs, lses, vc.shape[-1], kw["softmax_lse_flag"])


def _assemble(query, layout, out_layout, n, outs, lses, dv, want_lse):
    """Scatter the per-batch [q_len, N, D_v] outputs into ``out_layout``; the lse follows the
    query ``layout``."""
    if layout == "TND":
        out = torch.cat(outs) if outs else query.new_zeros(0, n, dv)
        lse = torch.cat([x.t() for x in lses]).unsqueeze(-1) if outs else torch.zeros(0, n, 1)
        if out_layout == "NTD":
            out = out.transpose(0, 1)
        result = out.contiguous().to(query.dtype)
    else:
        b = query.shape[0]
        s = query.shape[2] if layout == "BNSD" else query.shape[1]
        full = torch.zeros(b, s, n, dv)
        lse = torch.zeros(b, n, s, 1)
        for i, (o, ls) in enumerate(zip(outs, lses, strict=True)):
            full[i, : o.shape[0]] = o
            lse[i, :, : o.shape[0], 0] = ls
        if out_layout == "BNSD":
            full = full.transpose(1, 2)
        elif out_layout == "NBSD":
            full = full.permute(2, 0, 1, 3)
        elif out_layout == "BSH":
            full = full.reshape(b, s, n * dv)
        result = full.contiguous().to(query.dtype)
    if not want_lse:
        lse = torch.zeros(1)
    return result, lse.float()


def npu_fused_infer_attention_score(query, key, value, **kw):
    return attention(query, key, value, **kw)


def npu_fused_infer_attention_score_out(query, key, value, **kw):
    """``.out``: writes ``attention_out`` (and ``softmax_lse`` when ``softmax_lse_flag``) in place;
    ``workspace`` is accepted and unused here (``constraints.check_graph_workspace`` refuses a
    missing one in a graph task group). Callers pass the outputs as ``out=[attention_out,
    softmax_lse]``: torch_npu registers them as one ``Tensor[] out`` (``library.Overload``)."""
    out_t, lse_t = kw.pop("attention_out"), kw.pop("softmax_lse")
    kw.pop("workspace", None)
    out, lse = attention(query, key, value, **kw)
    if tuple(out_t.shape) != tuple(out.shape):
        raise ValueError(f"attention_out has shape {tuple(out_t.shape)}, the result is {tuple(out.shape)}")
    out_t.copy_(out)
    if kw["softmax_lse_flag"]:
        if lse_t.numel() != lse.numel():
            raise ValueError(f"softmax_lse has {lse_t.numel()} elements, the result has {lse.numel()}")
        lse_t.copy_(lse.view(lse_t.shape))
    return out_t, lse_t


def get_max_workspace(query, key, value, **kw):
    """``_npu_fused_infer_attention_score_get_max_workspace``: a workspace tensor in query's
    dtype, as op-plugin allocates it (FusedInferAttentionScoreKernelNpuOpApi.cpp@517f2e7:
    ``apply_tensor_without_format({workspace_size}, query.options())``); one element here, the
    size being a property of the real kernel's tiling."""
    return torch.empty(1, dtype=query.dtype)


ATTENTION_KERNELS = {
    "npu_fused_infer_attention_score": npu_fused_infer_attention_score,
    "npu_fused_infer_attention_score.out": npu_fused_infer_attention_score_out,
    "_npu_fused_infer_attention_score_get_max_workspace": get_max_workspace,
}
