// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The vllm-ascend authors
// 16-lane float vectors (GCC vector extensions) and widening loads shared by the grouped-matmul
// kernels (moe.cpp, moe_packed.cpp). AVX-512 builds get one-instruction bf16 / fp16 widening;
// other targets (the x86-64-v3 wheel, aarch64) get the portable forms.
#pragma once

#include <cstdint>
#include <cstring>
#ifdef __AVX512F__
#include <immintrin.h>
#endif

#include "common.h"

// The 64-byte vector types below are internal (inlined helpers): GCC's note that passing them
// changes the ABI on targets without AVX-512 does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace ascend_ops {
namespace simd {

typedef float v16 __attribute__((vector_size(64)));
typedef float v8 __attribute__((vector_size(32)));
typedef float v4 __attribute__((vector_size(16)));
typedef uint16_t u16x16 __attribute__((vector_size(32)));
typedef uint32_t u32x16 __attribute__((vector_size(64)));

inline v16 load16(const float* p) {
  v16 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline v16 load16(const bf16* p) {  // bf16 -> float is a 16-bit shift
#ifdef __AVX512F__
  // one widening load + one shift (GCC splits the generic form below into 256-bit halves)
  const __m512i u = _mm512_slli_epi32(
      _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16);
  return reinterpret_cast<v16>(_mm512_castsi512_ps(u));
#else
  u16x16 h;
  std::memcpy(&h, p, sizeof(h));
  const u32x16 u = __builtin_convertvector(h, u32x16) << 16;
  v16 v;
  std::memcpy(&v, &u, sizeof(v));
  return v;
#endif
}
inline v16 load16(const f16* p) {
#if defined(__AVX512F__) && defined(__F16C__)
  const __m512 f = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return reinterpret_cast<v16>(f);
#else
  float t[16];
  for (int j = 0; j < 16; ++j) t[j] = to_float(p[j]);
  return load16(t);
#endif
}

// Sum of the 16 lanes by pairwise halves (a few vector adds instead of 15 serial scalar adds).
inline float hsum(const v16& v) {
  v8 lo, hi;
  std::memcpy(&lo, &v, sizeof(lo));
  std::memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof(lo), sizeof(hi));
  const v8 a = lo + hi;
  v4 a_lo, a_hi;
  std::memcpy(&a_lo, &a, sizeof(a_lo));
  std::memcpy(&a_hi, reinterpret_cast<const char*>(&a) + sizeof(a_lo), sizeof(a_hi));
  const v4 b = a_lo + a_hi;
  return (b[0] + b[2]) + (b[1] + b[3]);
}

}  // namespace simd
}  // namespace ascend_ops
