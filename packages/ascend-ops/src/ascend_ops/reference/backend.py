# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""The reference backend as the family table (``ascend_ops.families``) calls it: one function per
op, named as the op, taking what the op's npu and native implementations take.

Most are the oracle functions of ``ascend_ops.reference`` themselves. The others first run the
checks only this branch needs (values read back from tensors, which the npu and native kernels
check on their side or the NPU operator bounds-checks on the device), or adapt the arguments
(handles of CPU packs and expert counts are ignored; ``out=`` forms copy the result).
"""

from __future__ import annotations

import torch

from ascend_ops.checks import attention as attention_checks
from ascend_ops.checks import encoder_attention as encoder_checks
from ascend_ops.checks import kv_blocks as kv_block_checks
from ascend_ops.checks import kv_cache as kv_cache_checks
from ascend_ops.checks import layers as layer_checks
from ascend_ops.checks import mrope as mrope_checks
from ascend_ops.checks import sparse_attention as sparse_checks
from ascend_ops.checks import spec_decode as spec_checks
from ascend_ops.reference import attention as _attention
from ascend_ops.reference import kv_blocks as _kv_blocks
from ascend_ops.reference import kv_cache as _kv_cache
from ascend_ops.reference import kv_quant, paged
from ascend_ops.reference import mla as _mla
from ascend_ops.reference import moe as _moe
from ascend_ops.reference import rotary as _rotary
from ascend_ops.reference import sparse_attention as _sparse
from ascend_ops.reference import spec_decode as _spec
from ascend_ops.reference.activation import swiglu
from ascend_ops.reference.encoder_attention import encoder_attention as _encoder_attention
from ascend_ops.reference.linear import linear as _linear
from ascend_ops.reference.lora import lora_expand, lora_linear, lora_shrink, sgmv_expand, sgmv_shrink
from ascend_ops.reference.mrope import mrope as _mrope
from ascend_ops.reference.norm import add_rms_norm, rms_norm
from ascend_ops.reference.quant import dynamic_quant, quant_matmul, quantize
from ascend_ops.reference.quant_moe import grouped_quant_matmul
from ascend_ops.reference.sampling import greedy_argmax

moe_gating_top_k = _moe.moe_gating_top_k
moe_finalize_routing = _moe.moe_finalize_routing
mla_decode = _mla.mla_decode
mla_gather_context = paged.gather_context


def rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox):
    layer_checks.rotary_values(positions, cos_sin_cache)
    return _rotary.rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox)


def mrope(positions, query, key, head_size, cos_sin_cache, mrope_section, interleaved, is_neox):
    mrope_checks.mrope_values(positions, cos_sin_cache)
    return _mrope(positions, query, key, head_size, cos_sin_cache, mrope_section, interleaved,
                  is_neox)


def encoder_attention(query, key, value, cu_seqlens, scale, ends):
    """The per-sequence softmax over the host ends, ``cu_seqlens`` checked against them."""
    encoder_checks.cu_seqlens_values(cu_seqlens, ends)
    return _encoder_attention(query, key, value, ends, scale)


def read_kv_blocks(key_cache, value_cache, block_ids):
    kv_block_checks.block_values(block_ids, key_cache.shape[0], distinct=False)
    return _kv_blocks.read_kv_blocks(key_cache, value_cache, block_ids)


def write_kv_blocks(blocks, key_cache, value_cache, block_ids):
    kv_block_checks.block_values(block_ids, key_cache.shape[0], distinct=True)
    _kv_blocks.write_kv_blocks(blocks, key_cache, value_cache, block_ids)


def reshape_and_cache(key, value, key_cache, value_cache, slot_mapping, k_scale=1.0, v_scale=1.0):
    """The scatter into the caches; a cache stored in another dtype is written quantized
    (``reference/kv_quant.py``)."""
    kv_cache_checks.slot_values(slot_mapping, key_cache)
    if key_cache.dtype != key.dtype:
        key = kv_quant.quantize(key, key_cache.dtype, k_scale)
        value = kv_quant.quantize(value, value_cache.dtype, v_scale)
    _kv_cache.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping)


def fused_infer_attention(query, key_cache, value_cache, block_table, query_start_loc, seq_lens,
                          scale, causal, ends, kv_lens, k_scale, v_scale, out=None,
                          softmax_lse=None, workspace=None, step=None):
    """TND attention; returns ``out`` (filled) when given, else a new tensor."""
    key_cache, value_cache, block_table, query_start_loc, seq_lens = paged.cpu_inputs(
        query, key_cache, value_cache, block_table, query_start_loc, seq_lens, ends, kv_lens,
        k_scale, v_scale, step)
    attention_checks.attention_values(query, key_cache, block_table, query_start_loc, seq_lens,
                                      "TND")
    result = _attention.fused_infer_attention(query, key_cache, value_cache, block_table,
                                              query_start_loc, seq_lens, scale, causal)
    if out is None:
        return result
    out.copy_(result)
    return out


def fused_infer_attention_workspace(*args) -> None:
    """CPU branches need no workspace."""
    return None


def linear(x, weight, bias, handle):
    return _linear(x, weight, bias)


def pack_linear_weight(weight: torch.Tensor) -> int:
    """No pack: the reference reads ``weight``."""
    return -1


def moe_init_routing(x, expert_idx, num_experts=-1):
    return _moe.moe_init_routing(x, expert_idx)


def grouped_matmul(x, weight, group_list, handle=-1):
    return _moe.grouped_matmul(x, weight, group_list)


def grouped_matmul_swiglu(x, weight, group_list, handle=-1):
    return _moe.grouped_matmul_swiglu(x, weight, group_list)


def pack_grouped_matmul_weight(weight: torch.Tensor) -> int:
    """No pack: the reference reads ``weight``."""
    return -1


def mla_decode_out(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, ends, kv_lens, scale, out,
                   softmax_lse, workspace):
    out.copy_(_mla.mla_decode(q_nope, q_pe, kv_c_cache, k_pe_cache, block_table, ends, kv_lens,
                              scale))


def mla_decode_heads(n: int) -> int:
    """No head padding on CPU."""
    return n


def mla_decode_workspace(*args) -> None:
    """CPU branches need no workspace."""
    return None


def mla_prefill(query, key, value, ends, kv_lens, scale, write=None, attend=None):
    """The reference math (``write`` / ``attend``, the paged path's ops, are not used)."""
    return _mla.mla_prefill(query, key, value, ends, kv_lens, scale)


def lightning_indexer(query, key_cache, weights, block_table, actual_seq_lengths_query,
                      actual_seq_lengths_key, sparse_count, causal):
    """The reference top-k after the value checks of the lengths and block table."""
    ends, kv_lens = sparse_checks.lengths_values(query.shape[0], key_cache, block_table,
                                                 actual_seq_lengths_query, actual_seq_lengths_key,
                                                 "actual_seq_lengths_key")
    return _sparse.lightning_indexer(query, key_cache, weights, block_table, ends, kv_lens,
                                     sparse_count, causal)


def sparse_flash_attention(q_nope, q_pe, kv_c_cache, k_pe_cache, sparse_indices, block_table,
                           actual_seq_lengths_query, actual_seq_lengths_kv, scale, causal):
    """The reference sparse attention after the value checks of lengths, table and indices."""
    ends, kv_lens = sparse_checks.lengths_values(q_nope.shape[0], kv_c_cache, block_table,
                                                 actual_seq_lengths_query, actual_seq_lengths_kv,
                                                 "actual_seq_lengths_kv")
    sparse_checks.indices_values(sparse_indices)
    return _sparse.sparse_flash_attention(q_nope, q_pe, kv_c_cache, k_pe_cache, sparse_indices,
                                          block_table, ends, kv_lens, scale, causal)


def sample_recovered_tokens(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs,
                            inv_q):
    spec_checks.layout(draft_token_ids, cu_num_draft_tokens, None, target_probs.shape[1])
    return _spec.sample_recovered_tokens(draft_token_ids, cu_num_draft_tokens, draft_probs,
                                         target_probs, inv_q)


def rejection_sample(draft_token_ids, cu_num_draft_tokens, target_argmax, target_probs,
                     draft_probs, bonus_token_ids, recovered_token_ids, uniform_probs, is_greedy,
                     max_spec_len):
    vocab = None if is_greedy is None or target_probs is None else target_probs.shape[1]
    spec_checks.layout(draft_token_ids, cu_num_draft_tokens, max_spec_len, vocab)
    return _spec.rejection_sample(draft_token_ids, cu_num_draft_tokens, target_argmax,
                                  target_probs, draft_probs, bonus_token_ids, recovered_token_ids,
                                  uniform_probs, is_greedy, max_spec_len)


__all__ = [
    "add_rms_norm", "dynamic_quant", "encoder_attention", "fused_infer_attention",
    "fused_infer_attention_workspace", "greedy_argmax", "grouped_matmul", "grouped_matmul_swiglu",
    "grouped_quant_matmul", "lightning_indexer", "linear", "lora_expand", "lora_linear",
    "lora_shrink", "mla_decode", "mla_decode_heads",
    "mla_decode_out", "mla_decode_workspace", "mla_gather_context", "mla_prefill",
    "moe_finalize_routing", "moe_gating_top_k", "moe_init_routing", "mrope",
    "pack_grouped_matmul_weight", "pack_linear_weight", "quant_matmul", "quantize",
    "read_kv_blocks", "rejection_sample", "reshape_and_cache",
    "rms_norm", "rotary_embedding", "sample_recovered_tokens", "sgmv_expand", "sgmv_shrink",
    "sparse_flash_attention", "swiglu", "write_kv_blocks",
]
