// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The vllm-ascend authors
// Rotary embedding (neox halves / GPT-J interleaved pairs, partial rotary_dim) from a vLLM-style
// cos_sin_cache [max_position, rotary_dim] = cat(cos, sin). Out of place into contiguous outputs.
#include "common.h"
#include "kernels.h"

namespace ascend_ops {
namespace {

template <typename T>
void rotate_heads(const T* in, T* out, int64_t heads, int64_t hs, int64_t half, const float* cos,
                  const float* sin, bool neox) {
  for (int64_t h = 0; h < heads; ++h) {
    const T* x = in + h * hs;
    T* y = out + h * hs;
    for (int64_t i = 0; i < half; ++i) {
      const int64_t a = neox ? i : 2 * i;
      const int64_t b = neox ? i + half : 2 * i + 1;
      const float x1 = to_float(x[a]);
      const float x2 = to_float(x[b]);
      y[a] = from_float<T>(x1 * cos[i] - x2 * sin[i]);
      y[b] = from_float<T>(x2 * cos[i] + x1 * sin[i]);
    }
    for (int64_t i = 2 * half; i < hs; ++i) y[i] = x[i];
  }
}

}  // namespace

void rotary_embedding(uintptr_t positions, uintptr_t query, uintptr_t key, uintptr_t query_out,
                      uintptr_t key_out, int64_t tokens, int64_t q_heads, int64_t k_heads,
                      int64_t head_size, uintptr_t cache, int cache_dtype, int64_t max_position,
                      int64_t rotary_dim, bool is_neox, int dtype) {
  const int64_t* pos = ptr<const int64_t>(positions);
  for (int64_t t = 0; t < tokens; ++t) {
    if (pos[t] < 0 || pos[t] >= max_position)
      bad_arg("positions[" + std::to_string(t) + "]=" + std::to_string(pos[t]) +
              " is outside [0, " + std::to_string(max_position) + ") (cos_sin_cache rows)");
  }
  if (rotary_dim % 2 || rotary_dim > head_size)
    bad_arg("cos_sin_cache: rotary_dim must be even and <= head_size");
  const int64_t half = rotary_dim / 2;
  dispatch(dtype, "query", [&](auto tag) {
    using T = decltype(tag);
    dispatch(cache_dtype, "cos_sin_cache", [&](auto ctag) {
      using C = decltype(ctag);
      const C* cs = ptr<const C>(cache);
      const bool par = tokens * (q_heads + k_heads) * head_size >= (1 << 19) && tokens > 1;
#pragma omp parallel for schedule(static) if (par)
      for (int64_t t = 0; t < tokens; ++t) {
        std::vector<float> cosv(half), sinv(half);
        const C* row = cs + pos[t] * rotary_dim;
        for (int64_t i = 0; i < half; ++i) {
          cosv[i] = to_float(row[i]);
          sinv[i] = to_float(row[half + i]);
        }
        rotate_heads<T>(ptr<const T>(query) + t * q_heads * head_size,
                        ptr<T>(query_out) + t * q_heads * head_size, q_heads, head_size, half,
                        cosv.data(), sinv.data(), is_neox);
        rotate_heads<T>(ptr<const T>(key) + t * k_heads * head_size,
                        ptr<T>(key_out) + t * k_heads * head_size, k_heads, head_size, half,
                        cosv.data(), sinv.data(), is_neox);
      }
    });
  });
}

}  // namespace ascend_ops
