"""Kernels of the fake torch_npu: the published semantics of each operator, computed with
``ascend_ops.reference`` and checking the documented constraints the real operators impose."""

from __future__ import annotations

import torch
from ascend_ops import reference


def npu_rms_norm(self, gamma, epsilon):
    xf = self.float()
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + epsilon)
    return reference.rms_norm(self, gamma, epsilon), rstd


def npu_add_rms_norm(x1, x2, gamma, epsilon):
    y, x_sum = reference.add_rms_norm(x1, x2, gamma, epsilon)
    rstd = torch.rsqrt(x_sum.float().pow(2).mean(-1, keepdim=True) + epsilon)
    return y, rstd, x_sum


def npu_swiglu(self, dim):
    moved = self.movedim(dim, -1)
    return reference.swiglu(moved).movedim(-1, dim).contiguous()


def _npu_rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox_style):
    if query.dim() != 2 or key.dim() != 2:
        raise ValueError("ATB rotary embedding takes query/key as [T, H*head_size]")
    if cos_sin_cache.dtype != query.dtype:
        raise TypeError("ATB rotary embedding needs cos_sin_cache in the query dtype")
    q, k = reference.rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox_style)
    query.copy_(q)
    key.copy_(k)


def _npu_reshape_and_cache(key, value, key_cache, value_cache, slot_indices):
    if slot_indices.dtype != torch.int32:
        raise TypeError("ATB reshape_and_cache takes int32 slot_indices")
    reference.reshape_and_cache(key, value, key_cache, value_cache, slot_indices)


_FIA_UNMODELLED = (
    "pse_shift", "dequant_scale1", "quant_scale1", "dequant_scale2", "quant_scale2",
    "quant_offset2", "antiquant_scale", "antiquant_offset", "key_antiquant_scale",
    "key_antiquant_offset", "value_antiquant_scale", "value_antiquant_offset",
    "query_padding_size", "kv_padding_size", "key_shared_prefix", "value_shared_prefix",
    "actual_shared_prefix_len", "query_rope", "key_rope", "key_rope_antiquant_scale",
)


def npu_fused_infer_attention_score(query, key, value, **kw):
    """TND query + paged KV ([num_blocks, block_size, Hk*D] with block_table) only."""
    for name in _FIA_UNMODELLED:
        if kw[name] is not None:
            raise NotImplementedError(f"fake FIA does not model {name}")
    if kw["input_layout"] != "TND" or kw["block_table"] is None:
        raise NotImplementedError("fake FIA models input_layout='TND' with a block_table only")
    t, n, d = query.shape
    if kw["num_heads"] != n:
        raise ValueError(f"num_heads={kw['num_heads']} disagrees with query heads {n}")
    hk = kw["num_key_value_heads"] or n
    nb, bs, hd = key.shape
    if bs != kw["block_size"] or hd != hk * d:
        raise ValueError("key must be [num_blocks, block_size, num_key_value_heads * D]")
    ends = list(kw["actual_seq_lengths"])
    kv = list(kw["actual_seq_lengths_kv"])
    if len(ends) != len(kv) or ends[-1] != t:
        raise ValueError("actual_seq_lengths must be cumulative query ends matching the KV lengths")
    mode, mask = kw["sparse_mode"], kw["atten_mask"]
    if mode == 3:
        expect = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
        if mask is None or mask.dtype != torch.bool or not torch.equal(mask.cpu(), expect):
            raise ValueError("sparse_mode=3 needs the 2048x2048 upper-triangular bool atten_mask")
        causal = True
    elif mode == 0 and mask is None:
        causal = False
    else:
        raise NotImplementedError(f"fake FIA models sparse_mode 3 (+mask) or 0 (no mask), got {mode}")
    out = reference.fused_infer_attention(
        query,
        key.view(nb, bs, hk, d),
        value.view(nb, bs, hk, d),
        kw["block_table"],
        torch.tensor([0, *ends]),
        torch.tensor(kv),
        kw["scale"],
        causal,
    )
    return out, torch.empty(0, dtype=torch.float32)


def npu_fused_infer_attention_score_out(query, key, value, **kw):
    """The ``.out`` overload: same semantics, written into ``attention_out``."""
    out, lse = kw.pop("attention_out"), kw.pop("softmax_lse")
    kw.pop("workspace")
    result, _ = npu_fused_infer_attention_score(query, key, value, **kw)
    out.copy_(result)
    return out, lse


def _npu_fused_infer_attention_score_get_max_workspace(query, key, value, **kw):
    """Validates the arguments as the operator would; the size is not modelled."""
    npu_fused_infer_attention_score(query, key, value, **kw)
    return torch.empty(0, dtype=torch.uint8)


KERNELS = {
    "npu_rms_norm": npu_rms_norm,
    "npu_add_rms_norm": npu_add_rms_norm,
    "npu_swiglu": npu_swiglu,
    "npu_fused_infer_attention_score": npu_fused_infer_attention_score,
    "npu_fused_infer_attention_score.out": npu_fused_infer_attention_score_out,
    "_npu_fused_infer_attention_score_get_max_workspace": _npu_fused_infer_attention_score_get_max_workspace,
    "_npu_rotary_embedding": _npu_rotary_embedding,
    "_npu_reshape_and_cache": _npu_reshape_and_cache,
}
