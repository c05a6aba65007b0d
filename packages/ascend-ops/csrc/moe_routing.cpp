// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The vllm-ascend authors
// MoE routing on the native CPU backend: gating top-k, init routing (expert-sorted permutation),
// finalize routing (weighted un-permute). One call each instead of a chain of small torch ops;
// at decode (a few tokens) the chain's per-op cost, not arithmetic, was most of the routing time.
//
// Semantics: ascend_ops.reference.moe (the oracle), after torch_npu's npu_moe_gating_top_k,
// npu_moe_init_routing and npu_moe_finalize_routing:
// * gating (no expert groups, no score bias): scores = softmax(logits) or sigmoid(logits) in
//   float32 per token; the top_k experts by score, in descending order (equal scores in torch.topk's
//   CPU order, see gating()); weights = their scores, divided by their sum when renormalize, times scale.
// * init routing: rows sorted by expert id, ties in token-major order (token t's choice j at flat
//   position t * k + j); expanded_x[r] = x[token of r]; expanded_row_idx[j * T + t] = the row of
//   token t's choice j; expanded_expert_idx[r] = the expert of row r.
// * finalize routing (no skip, no bias): out[t] = sum_j scales[t][j] * rows[expanded_row_idx[j*T+t]]
//   with float32 scales, accumulated in float32 in order j = 0..k-1, written in the rows' dtype.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "common.h"
#include "kernels.h"

namespace ascend_ops {
namespace {

template <typename T>
void gating(const T* logits, float* weights, int32_t* ids, int64_t tokens, int64_t experts,
            int64_t top_k, bool sigmoid, bool renormalize, float scale) {
  std::vector<float> s(experts);
  std::vector<std::pair<float, int64_t>> order(experts);
  for (int64_t t = 0; t < tokens; ++t) {
    const T* l = logits + t * experts;
    if (sigmoid) {
      for (int64_t e = 0; e < experts; ++e) s[e] = 1.f / (1.f + std::exp(-to_float(l[e])));
    } else {
      float mx = -INFINITY;
      for (int64_t e = 0; e < experts; ++e) mx = std::max(mx, to_float(l[e]));
      float sum = 0.f;
      for (int64_t e = 0; e < experts; ++e) {
        s[e] = std::exp(to_float(l[e]) - mx);
        sum += s[e];
      }
      for (int64_t e = 0; e < experts; ++e) s[e] /= sum;
    }
    // Equal scores keep torch.topk's CPU order, so this matches the torch paths exactly: ATen's
    // topk (aten/src/ATen/native/TopKImpl.h) runs std::partial_sort when k * 64 <= n, else
    // std::nth_element then std::sort of the first k - 1, on (value, index) pairs compared by
    // value alone; the same calls on the same sequence give the same order.
    for (int64_t e = 0; e < experts; ++e) order[e] = {s[e], e};
    const auto larger = [](const std::pair<float, int64_t>& a, const std::pair<float, int64_t>& b) {
      return (std::isnan(a.first) && !std::isnan(b.first)) || a.first > b.first;
    };
    if (top_k * 64 <= experts) {
      std::partial_sort(order.begin(), order.begin() + top_k, order.end(), larger);
    } else {
      std::nth_element(order.begin(), order.begin() + top_k - 1, order.end(), larger);
      std::sort(order.begin(), order.begin() + top_k - 1, larger);
    }
    float total = 0.f;
    for (int64_t j = 0; j < top_k; ++j) total += order[j].first;
    for (int64_t j = 0; j < top_k; ++j) {
      float w = order[j].first;
      if (renormalize) w /= total;
      weights[t * top_k + j] = w * scale;
      ids[t * top_k + j] = int32_t(order[j].second);
    }
  }
}

template <typename I>
void routing_order(const I* expert_idx, int64_t n, std::vector<int64_t>& row_of) {
  int64_t experts = 0;
  for (int64_t p = 0; p < n; ++p) {
    const int64_t e = int64_t(expert_idx[p]);
    if (e < 0) bad_arg("expert_idx: expert ids must be >= 0, got " + std::to_string(e));
    experts = std::max(experts, e + 1);
  }
  std::vector<int64_t> next(experts + 1, 0);  // counting sort: rows of expert e start at next[e]
  for (int64_t p = 0; p < n; ++p) ++next[int64_t(expert_idx[p]) + 1];
  for (int64_t e = 0; e < experts; ++e) next[e + 1] += next[e];
  row_of.resize(n);
  for (int64_t p = 0; p < n; ++p) row_of[p] = next[int64_t(expert_idx[p])]++;
}

}  // namespace

void moe_gating_top_k(uintptr_t logits, uintptr_t weights, uintptr_t ids, int64_t tokens,
                      int64_t experts, int64_t top_k, bool sigmoid, bool renormalize, double scale,
                      int dtype) {
  if (top_k < 1 || top_k > experts) bad_arg("top_k must be in [1, experts]");
  dispatch(dtype, "router_logits", [&](auto tag) {
    using T = decltype(tag);
    gating<T>(ptr<const T>(logits), ptr<float>(weights), ptr<int32_t>(ids), tokens, experts, top_k,
              sigmoid, renormalize, float(scale));
  });
}

void moe_init_routing(uintptr_t x, uintptr_t expert_idx, bool idx_int64, uintptr_t expanded_x,
                      uintptr_t expanded_row_idx, uintptr_t expanded_expert_idx, int64_t tokens,
                      int64_t top_k, int64_t hidden, int64_t element_size) {
  const int64_t n = tokens * top_k;
  std::vector<int64_t> row_of;
  if (idx_int64)
    routing_order(ptr<const int64_t>(expert_idx), n, row_of);
  else
    routing_order(ptr<const int32_t>(expert_idx), n, row_of);
  const char* src = ptr<const char>(x);
  char* dst = ptr<char>(expanded_x);
  int32_t* row_idx = ptr<int32_t>(expanded_row_idx);
  int32_t* sorted_ids = ptr<int32_t>(expanded_expert_idx);
  const int64_t row_bytes = hidden * element_size;
  for (int64_t p = 0; p < n; ++p) {
    const int64_t t = p / top_k, j = p % top_k, r = row_of[p];
    row_idx[j * tokens + t] = int32_t(r);
    sorted_ids[r] = idx_int64 ? int32_t(ptr<const int64_t>(expert_idx)[p])
                              : ptr<const int32_t>(expert_idx)[p];
    std::memcpy(dst + r * row_bytes, src + t * row_bytes, size_t(row_bytes));
  }
}

void moe_finalize_routing(uintptr_t rows, uintptr_t scales, uintptr_t expanded_row_idx,
                          uintptr_t out, int64_t tokens, int64_t top_k, int64_t hidden,
                          int dtype) {
  const int32_t* row_idx = ptr<const int32_t>(expanded_row_idx);
  const int64_t n = tokens * top_k;
  for (int64_t p = 0; p < n; ++p)
    if (row_idx[p] < 0 || row_idx[p] >= n)
      bad_arg("expanded_row_idx: row " + std::to_string(row_idx[p]) + " outside [0, " +
              std::to_string(n) + ")");
  dispatch(dtype, "expanded_rows", [&](auto tag) {
    using T = decltype(tag);
    const T* r = ptr<const T>(rows);
    const float* s = ptr<const float>(scales);
    T* o = ptr<T>(out);
    std::vector<float> acc(hidden);
    for (int64_t t = 0; t < tokens; ++t) {
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int64_t j = 0; j < top_k; ++j) {
        const float w = s[t * top_k + j];
        const T* row = r + int64_t(row_idx[j * tokens + t]) * hidden;
#pragma omp simd
        for (int64_t h = 0; h < hidden; ++h) acc[h] += w * to_float(row[h]);
      }
#pragma omp simd
      for (int64_t h = 0; h < hidden; ++h) o[t * hidden + h] = from_float<T>(acc[h]);
    }
  });
}

}  // namespace ascend_ops
