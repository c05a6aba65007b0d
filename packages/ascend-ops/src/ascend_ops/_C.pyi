# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Typed face of ``ascend_ops._C``, the pybind11 module of native CPU kernels (csrc/bindings.cpp,
entry points declared in csrc/kernels.h).

The kernels do not link libtorch: tensors go in as raw addresses (``Tensor.data_ptr()``), with
shapes and element strides; ``dtype`` codes are ``ascend_ops.native.layers.DTYPE_CODES``. An
invalid index raises ValueError before anything is written. pybind11 binds the arguments by
position only (no ``py::arg`` names). Every kernel releases the GIL.
"""

from collections.abc import Sequence

#: whether the build uses OpenMP (``ASCEND_OPS_OPENMP``)
openmp: bool

def rms_norm(x: int, w: int, out: int, rows: int, hidden: int, dtype: int, w_dtype: int,
             eps: float, /) -> None: ...
def add_rms_norm(x: int, residual: int, w: int, out: int, new_residual: int, rows: int,
                 hidden: int, dtype: int, w_dtype: int, eps: float, /) -> None: ...
def swiglu(x: int, out: int, rows: int, inter: int, dtype: int, /) -> None: ...
def greedy_argmax(logits: int, out: int, rows: int, vocab: int, dtype: int, /) -> None: ...
def rotary_embedding(positions: int, query: int, key: int, query_out: int, key_out: int,
                     tokens: int, q_heads: int, k_heads: int, head_size: int, cache: int,
                     cache_dtype: int, max_position: int, rotary_dim: int, is_neox: bool,
                     dtype: int, /) -> None: ...
def reshape_and_cache(key: int, value: int, key_cache: int, value_cache: int, slot_mapping: int,
                      tokens: int, kv_heads: int, head_dim: int, key_strides: Sequence[int],
                      value_strides: Sequence[int], key_cache_strides: Sequence[int],
                      value_cache_strides: Sequence[int], num_blocks: int, block_size: int,
                      dtype: int, /) -> None: ...
def paged_attention(query: int, key_cache: int, value_cache: int, block_table: int,
                    query_start_loc: int, seq_lens: int, out: int, tokens: int, num_heads: int,
                    num_kv_heads: int, head_dim: int, batch: int, max_blocks: int,
                    num_blocks: int, block_size: int, key_cache_strides: Sequence[int],
                    value_cache_strides: Sequence[int], scale: float, causal: bool, dtype: int,
                    /) -> None: ...
def grouped_matmul(x: int, weight: int, group_list: int, out: int, rows: int, k: int, n: int,
                   experts: int, stride_e: int, stride_n: int, dtype: int, /) -> None: ...
def grouped_weight_packed_size(experts: int, k: int, n: int, dtype: int, /) -> int:
    """Elements of the packed copy of an [experts, k, n] weight (moe_packed.cpp)."""
def pack_grouped_weight(weight: int, packed: int, experts: int, k: int, n: int, stride_e: int,
                        stride_k: int, stride_n: int, dtype: int, /) -> None: ...
def grouped_matmul_packed(x: int, packed: int, group_list: int, out: int, rows: int, k: int,
                          n: int, experts: int, dtype: int, /) -> None: ...
def grouped_matmul_packed_swiglu(x: int, packed: int, group_list: int, out: int, rows: int,
                                 k: int, n: int, experts: int, dtype: int, /) -> None:
    """The packed matmul with SwiGLU on its [rows, n] output, written as [rows, n / 2]
    (moe_packed_swiglu.cpp; n / 2 a multiple of 32)."""
def moe_gating_top_k(logits: int, weights: int, ids: int, tokens: int, experts: int, top_k: int,
                     sigmoid: bool, renormalize: bool, scale: float, dtype: int, /) -> None: ...
def moe_init_routing(x: int, expert_idx: int, idx_int64: bool, expanded_x: int,
                     expanded_row_idx: int, expanded_expert_idx: int, tokens: int, top_k: int,
                     hidden: int, element_size: int, /) -> None: ...
def moe_finalize_routing(rows: int, scales: int, expanded_row_idx: int, out: int, tokens: int,
                         top_k: int, hidden: int, dtype: int, /) -> None: ...
def sample_recovered_tokens(out: int, cu_num_draft_tokens: int, draft_ids: int, draft_probs: int,
                            draft_dtype: int, target_probs: int, target_dtype: int, inv_q: int,
                            inv_q_f64: bool, batch: int, tokens: int, vocab: int, /) -> None: ...
def rejection_sample(out: int, cu_num_draft_tokens: int, draft_ids: int, target_argmax: int,
                     target_probs: int, target_dtype: int, draft_probs: int, draft_dtype: int,
                     bonus_ids: int, recovered_ids: int, uniform_probs: int, is_greedy: int,
                     batch: int, tokens: int, vocab: int, max_spec_len: int, /) -> None: ...
def num_threads() -> int:
    """OpenMP threads the kernels use."""
def vector_isa() -> str:
    """The widest x86 vector extension this build was compiled for (-march): "avx512",
    "avx2" or "generic"."""
