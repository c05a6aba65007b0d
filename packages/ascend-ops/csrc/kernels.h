// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The vllm-ascend authors
// Entry points of ascend_ops._C (pointers are raw addresses, strides in elements).
#pragma once

#include <cstdint>
#include <vector>

namespace ascend_ops {

void rms_norm(uintptr_t x, uintptr_t w, uintptr_t out, int64_t rows, int64_t hidden, int dtype,
              int w_dtype, double eps);
void add_rms_norm(uintptr_t x, uintptr_t residual, uintptr_t w, uintptr_t out, uintptr_t new_residual,
                  int64_t rows, int64_t hidden, int dtype, int w_dtype, double eps);
void swiglu(uintptr_t x, uintptr_t out, int64_t rows, int64_t inter, int dtype);
// Greedy sampling (sampling.cpp): out[rows] (int64) = argmax of each logits row.
void greedy_argmax(uintptr_t logits, uintptr_t out, int64_t rows, int64_t vocab, int dtype);
void rotary_embedding(uintptr_t positions, uintptr_t query, uintptr_t key, uintptr_t query_out,
                      uintptr_t key_out, int64_t tokens, int64_t q_heads, int64_t k_heads,
                      int64_t head_size, uintptr_t cache, int cache_dtype, int64_t max_position,
                      int64_t rotary_dim, bool is_neox, int dtype);
void reshape_and_cache(uintptr_t key, uintptr_t value, uintptr_t key_cache, uintptr_t value_cache,
                       uintptr_t slot_mapping, int64_t tokens, int64_t kv_heads, int64_t head_dim,
                       const std::vector<int64_t>& key_strides,
                       const std::vector<int64_t>& value_strides,
                       const std::vector<int64_t>& key_cache_strides,
                       const std::vector<int64_t>& value_cache_strides, int64_t num_blocks,
                       int64_t block_size, int dtype);
void paged_attention(uintptr_t query, uintptr_t key_cache, uintptr_t value_cache,
                     uintptr_t block_table, uintptr_t query_start_loc, uintptr_t seq_lens,
                     uintptr_t out, int64_t tokens, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t batch, int64_t max_blocks, int64_t num_blocks,
                     int64_t block_size, const std::vector<int64_t>& key_cache_strides,
                     const std::vector<int64_t>& value_cache_strides, double scale, bool causal,
                     int dtype);
void grouped_matmul(uintptr_t x, uintptr_t weight, uintptr_t group_list, uintptr_t out,
                    int64_t rows, int64_t k, int64_t n, int64_t experts, int64_t stride_e,
                    int64_t stride_n, int dtype);
// Prepacked expert weights (moe_packed.cpp): size in elements, pack, matmul.
int64_t grouped_weight_packed_size(int64_t experts, int64_t k, int64_t n, int dtype);
void pack_grouped_weight(uintptr_t weight, uintptr_t packed, int64_t experts, int64_t k, int64_t n,
                         int64_t stride_e, int64_t stride_k, int64_t stride_n, int dtype);
void grouped_matmul_packed(uintptr_t x, uintptr_t packed, uintptr_t group_list, uintptr_t out,
                           int64_t rows, int64_t k, int64_t n, int64_t experts, int dtype);
// The same matmul with SwiGLU on its [rows, n] output, written as [rows, n / 2]
// (moe_packed_swiglu.cpp; n / 2 a multiple of 32).
void grouped_matmul_packed_swiglu(uintptr_t x, uintptr_t packed, uintptr_t group_list,
                                  uintptr_t out, int64_t rows, int64_t k, int64_t n,
                                  int64_t experts, int dtype);
// MoE routing (moe_routing.cpp).
void moe_gating_top_k(uintptr_t logits, uintptr_t weights, uintptr_t ids, int64_t tokens,
                      int64_t experts, int64_t top_k, bool sigmoid, bool renormalize, double scale,
                      int dtype);
void moe_init_routing(uintptr_t x, uintptr_t expert_idx, bool idx_int64, uintptr_t expanded_x,
                      uintptr_t expanded_row_idx, uintptr_t expanded_expert_idx, int64_t tokens,
                      int64_t top_k, int64_t hidden, int64_t element_size);
void moe_finalize_routing(uintptr_t rows, uintptr_t scales, uintptr_t expanded_row_idx,
                          uintptr_t out, int64_t tokens, int64_t top_k, int64_t hidden,
                          int dtype);
void sample_recovered_tokens(uintptr_t out, uintptr_t cu_num_draft_tokens, uintptr_t draft_ids,
                             uintptr_t draft_probs, int draft_dtype, uintptr_t target_probs,
                             int target_dtype, uintptr_t inv_q, bool inv_q_f64, int64_t batch,
                             int64_t tokens, int64_t vocab);
void rejection_sample(uintptr_t out, uintptr_t cu_num_draft_tokens, uintptr_t draft_ids,
                      uintptr_t target_argmax, uintptr_t target_probs, int target_dtype,
                      uintptr_t draft_probs, int draft_dtype, uintptr_t bonus_ids,
                      uintptr_t recovered_ids, uintptr_t uniform_probs, uintptr_t is_greedy,
                      int64_t batch, int64_t tokens, int64_t vocab, int64_t max_spec_len);

}  // namespace ascend_ops
