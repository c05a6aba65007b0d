// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The vllm-ascend authors
// Greedy sampling: the index of each row's largest logit over contiguous [rows, vocab] buffers,
// torch.argmax(dim=-1) semantics (the first maximal index; NaN counts as the largest value, so
// the first NaN's index where a row has one).
#include <cmath>
#include <limits>

#include "common.h"
#include "kernels.h"
#include "simd.h"

namespace ascend_ops {
namespace {

template <typename T>
int64_t row_argmax(const T* x, int64_t n) {
  using namespace simd;
  const int64_t nv = n - n % 8;
  const float lowest = -std::numeric_limits<float>::infinity();
  // pass 1: the maximum (8 lanes, NaN lanes flagged apart: a > b is false for NaN)
  v8 m = splat8(lowest);
  i32x8 nan = {};
  for (int64_t i = 0; i < nv; i += 8) {
    const v8 v = load8(x + i);
    nan |= (i32x8)(v != v);
    m = v > m ? v : m;
  }
  float best = lowest;
  bool has_nan = false;
  for (int j = 0; j < 8; ++j) {
    best = m[j] > best ? m[j] : best;
    has_nan = has_nan || nan[j] != 0;
  }
  for (int64_t i = nv; i < n; ++i) {
    const float v = to_float(x[i]);
    has_nan = has_nan || std::isnan(v);
    best = v > best ? v : best;
  }
  // pass 2: the first index holding it (the row is in cache now)
  for (int64_t i = 0; i < n; ++i) {
    const float v = to_float(x[i]);
    if (has_nan ? std::isnan(v) : v == best) return i;
  }
  return 0;  // unreachable for n > 0: some element equals the maximum (or is NaN)
}

}  // namespace

void greedy_argmax(uintptr_t logits, uintptr_t out, int64_t rows, int64_t vocab, int dtype) {
  if (vocab <= 0) throw std::invalid_argument("greedy_argmax: vocab must be positive");
  dispatch(dtype, "logits", [&](auto tag) {
    using T = decltype(tag);
    const T* x = ptr<const T>(logits);
    int64_t* o = ptr<int64_t>(out);
    const bool par = rows > 1 && rows * vocab >= (1 << 16);  // fork only when it pays
#pragma omp parallel for schedule(static) if (par)
    for (int64_t r = 0; r < rows; ++r) o[r] = row_argmax(x + r * vocab, vocab);
  });
}

}  // namespace ascend_ops
