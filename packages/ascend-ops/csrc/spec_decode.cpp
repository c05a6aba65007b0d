// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The vllm-ascend authors
// Speculative-decoding verification (vLLM 0.32 vllm/v1/sample/rejection_sampler.py semantics):
// recovered-token sampling and rejection sampling over the flat draft layout
// (cu_num_draft_tokens = inclusive cumulative draft counts). Index tensors arrive as int64,
// is_greedy as uint8 (or 0 = every row greedy), uniforms as float64. Float32 arithmetic where
// vLLM's kernels use float32 (ratio, residual, float32 score), so results match the float64
// reference in ascend_ops/reference/spec_decode.py token for token.
#include "common.h"
#include "kernels.h"

namespace ascend_ops {

namespace {

// Checks the layout before anything is read through it; returns nothing, throws ValueError.
void check_layout(const int64_t* cu, int64_t batch, int64_t tokens, int64_t max_spec_len) {
  int64_t prev = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t n = cu[b] - prev;
    if (n < 0 || (max_spec_len >= 0 && n > max_spec_len))
      bad_arg("cu_num_draft_tokens[" + std::to_string(b) + "]=" + std::to_string(cu[b]) +
              ": draft count " + std::to_string(n) + " is negative or above max_spec_len " +
              std::to_string(max_spec_len));
    prev = cu[b];
  }
  if (prev != tokens)
    bad_arg("cu_num_draft_tokens[-1]=" + std::to_string(prev) + " must equal the number of draft "
            "tokens " + std::to_string(tokens));
}

}  // namespace

void sample_recovered_tokens(uintptr_t out, uintptr_t cu_num_draft_tokens, uintptr_t draft_ids,
                             uintptr_t draft_probs, int draft_dtype, uintptr_t target_probs,
                             int target_dtype, uintptr_t inv_q, bool inv_q_f64, int64_t batch,
                             int64_t tokens, int64_t vocab) {
  const int64_t* cu = ptr<const int64_t>(cu_num_draft_tokens);
  check_layout(cu, batch, tokens, -1);
  const int64_t* draft = ptr<const int64_t>(draft_ids);
  int64_t* dst = ptr<int64_t>(out);
  dispatch(target_dtype, "target_probs", [&](auto ttag) {
    using TP = decltype(ttag);
    const TP* p = ptr<const TP>(target_probs);
    dispatch(draft_probs ? draft_dtype : kF32, "draft_probs", [&](auto dtag) {
      using DP = decltype(dtag);
      const DP* q = draft_probs ? ptr<const DP>(draft_probs) : nullptr;
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t start = b == 0 ? 0 : cu[b - 1];
        const bool par = (cu[b] - start) * vocab >= (1 << 16);
#pragma omp parallel for schedule(static) if (par)
        for (int64_t t = start; t < cu[b]; ++t) {
          const TP* pt = p + t * vocab;
          const DP* qt = q ? q + t * vocab : nullptr;
          double best = -INFINITY;
          int64_t best_id = 0;
          for (int64_t v = 0; v < vocab; ++v) {
            float residual = to_float(pt[v]);
            if (qt) {
              residual = residual - to_float(qt[v]);
              residual = residual > 0.0f ? residual : 0.0f;
            } else if (v == draft[t]) {
              residual = 0.0f;
            }
            double score;
            if (inv_q_f64) {
              score = double(residual) * ptr<const double>(inv_q)[b * vocab + v];
            } else {
              score = double(residual * ptr<const float>(inv_q)[b * vocab + v]);
            }
            if (score > best) { best = score; best_id = v; }
          }
          dst[t] = best_id;
        }
      }
    });
  });
}

void rejection_sample(uintptr_t out, uintptr_t cu_num_draft_tokens, uintptr_t draft_ids,
                      uintptr_t target_argmax, uintptr_t target_probs, int target_dtype,
                      uintptr_t draft_probs, int draft_dtype, uintptr_t bonus_ids,
                      uintptr_t recovered_ids, uintptr_t uniform_probs, uintptr_t is_greedy,
                      int64_t batch, int64_t tokens, int64_t vocab, int64_t max_spec_len) {
  const int64_t* cu = ptr<const int64_t>(cu_num_draft_tokens);
  check_layout(cu, batch, tokens, max_spec_len);
  const int64_t* draft = ptr<const int64_t>(draft_ids);
  const int64_t* argmax = target_argmax ? ptr<const int64_t>(target_argmax) : nullptr;
  const int64_t* bonus = ptr<const int64_t>(bonus_ids);
  const int64_t* recovered = recovered_ids ? ptr<const int64_t>(recovered_ids) : nullptr;
  const double* uniform = uniform_probs ? ptr<const double>(uniform_probs) : nullptr;
  const uint8_t* greedy_rows = is_greedy ? ptr<const uint8_t>(is_greedy) : nullptr;
  const int64_t width = max_spec_len + 1;
  int32_t* dst = ptr<int32_t>(out);
  if (greedy_rows) {  // random rows read probabilities at the draft id: check before reading
    for (int64_t t = 0; t < tokens; ++t)
      if (draft[t] < -1 || draft[t] >= vocab)
        bad_arg("draft_token_ids[" + std::to_string(t) + "]=" + std::to_string(draft[t]) +
                " outside [-1, vocab_size=" + std::to_string(vocab) + ")");
  }
  dispatch(target_probs ? target_dtype : kF32, "target_probs", [&](auto ttag) {
    using TP = decltype(ttag);
    const TP* p = target_probs ? ptr<const TP>(target_probs) : nullptr;
    dispatch(draft_probs ? draft_dtype : kF32, "draft_probs", [&](auto dtag) {
      using DP = decltype(dtag);
      const DP* q = draft_probs ? ptr<const DP>(draft_probs) : nullptr;
      for (int64_t b = 0; b < batch; ++b) {
        int32_t* row = dst + b * width;
        for (int64_t j = 0; j < width; ++j) row[j] = -1;  // PLACEHOLDER_TOKEN_ID
        const bool greedy = greedy_rows == nullptr || greedy_rows[b] != 0;
        if (greedy && argmax == nullptr) continue;  // no greedy rows declared (all random)
        const int64_t start = b == 0 ? 0 : cu[b - 1];
        const int64_t n = cu[b] - start;
        bool rejected = false;
        for (int64_t j = 0; j < n && !rejected; ++j) {
          const int64_t t = start + j;
          const int64_t d = draft[t];
          int64_t token;
          if (greedy) {
            token = argmax[t];
            rejected = d != token;
          } else {
            bool accepted = false;
            if (d >= 0) {
              const float q_d = q ? to_float(q[t * vocab + d]) : 1.0f;
              const float p_d = to_float(p[t * vocab + d]);
              accepted = q_d > 0.0f && double(p_d / q_d) >= uniform[t];
            }
            token = accepted ? d : recovered[t];
            rejected = !accepted;
          }
          row[j] = int32_t(token);
        }
        if (!rejected) row[n] = int32_t(bonus[b]);
      }
    });
  });
}

}  // namespace ascend_ops
