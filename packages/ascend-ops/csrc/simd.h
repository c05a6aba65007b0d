// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The vllm-ascend authors
// 16-lane float vectors and widening loads shared by the grouped-matmul kernels (moe.cpp,
// moe_packed.cpp): one GCC vector (a zmm register) with one-instruction bf16 / fp16 widening on
// AVX-512 builds, two 8-lane halves on other targets (the x86-64-v3 wheel, aarch64). Also 8-lane loads, stores
// and fast_exp for the elementwise kernels (norm_act.cpp): common.h's scalar conversions and
// fast_exp lane by lane (same integer steps, same polynomial), so results are bit-identical,
// written without branches so they compile to vector code.
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

typedef float v8 __attribute__((vector_size(32)));
typedef float v4 __attribute__((vector_size(16)));
// 8-lane forms for the elementwise kernels (norm_act.cpp): one AVX2 register, where GCC lowers
// 16-lane compares and selects lane by lane on targets without AVX-512. Compares are on signed
// lanes (AVX2 has no unsigned ones); every compared value is below 2^31.
typedef uint16_t u16x8 __attribute__((vector_size(16)));
typedef uint32_t u32x8 __attribute__((vector_size(32)));
typedef int32_t i32x8 __attribute__((vector_size(32)));

inline v8 splat8(float f) { return v8{} + f; }
inline u32x8 usplat8(uint32_t u) { return u32x8{} + u; }
inline u32x8 as_u(v8 v) { return (u32x8)v; }
inline v8 as_f(u32x8 u) { return (v8)u; }
// signed lane compares (values < 2^31): AVX2 has these as one instruction
inline i32x8 gt(u32x8 a, uint32_t b) { return (i32x8)a > int32_t(b); }
inline i32x8 lt(u32x8 a, uint32_t b) { return (i32x8)a < int32_t(b); }
inline i32x8 eq(u32x8 a, uint32_t b) { return (i32x8)a == int32_t(b); }

// common.h's to_float(f16) on 8 lanes (F. Giesen's half_to_float, integer selects).
inline v8 half_to_float8(u32x8 h) {
  const u32x8 o = ((h & 0x7fffu) << 13) + (112u << 23);
  const u32x8 exp = (h & 0x7c00u) << 13;
  const u32x8 inf_nan = o + (112u << 23);
  const u32x8 sub = as_u(as_f(o + (1u << 23)) - bits_to_float(113u << 23));
  const u32x8 r = eq(exp, 0x7c00u << 13) ? inf_nan : (eq(exp, 0) ? sub : o);
  return as_f(r | ((h & 0x8000u) << 16));
}

inline v8 load8(const float* p) {
  v8 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline u32x8 load_u16x8(const uint16_t* p) {
  u16x8 h;
  std::memcpy(&h, p, sizeof(h));
  return __builtin_convertvector(h, u32x8);
}
inline v8 load8(const bf16* p) { return as_f(load_u16x8(&p->bits) << 16); }
inline v8 load8(const f16* p) { return half_to_float8(load_u16x8(&p->bits)); }

inline void store_u16x8(uint16_t* p, u32x8 v) {  // low 16 bits of each lane
  const u16x8 h = __builtin_convertvector(v, u16x8);
  std::memcpy(p, &h, sizeof(h));
}
inline void store8(float* p, v8 v) { std::memcpy(p, &v, sizeof(v)); }
inline void store8(bf16* p, v8 v) {  // common.h's from_float<bf16>: nearest even, quiet NaN
  const u32x8 u = as_u(v);
  const u32x8 rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const u32x8 nan = (u >> 16) | 0x40u;
  store_u16x8(&p->bits, gt(u & 0x7fffffffu, 0x7f800000u) ? nan : rounded);
}
inline void store8(f16* p, v8 v) {  // common.h's from_float<f16> (F. Giesen's method)
  const u32x8 all = as_u(v);
  const u32x8 sign = all & 0x80000000u;
  const u32x8 u = all ^ sign;
  const u32x8 inf_nan = gt(u, 0x7f800000u) ? usplat8(0x7e00u) : usplat8(0x7c00u);
  const u32x8 sub = as_u(as_f(u) + 0.5f) - 0x3f000000u;
  const u32x8 normal = (u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13;
  const u32x8 o = lt(u, 0x47800000u) ? (lt(u, 0x38800000u) ? sub : normal) : inf_nan;
  store_u16x8(&p->bits, o | (sign >> 16));
}

// common.h's fast_exp on 8 lanes: same clamp and the same steps (exp_round_n, exp_reduce,
// exp_poly).
inline v8 exp8(v8 x) {
  x = x < splat8(-87.0f) ? splat8(-87.0f) : (x > splat8(88.0f) ? splat8(88.0f) : x);
  const v8 n = exp_round_n(x);
  const v8 p = exp_poly(exp_reduce(x, n));
  return p * as_f(((u32x8)__builtin_convertvector(n, i32x8) + 127u) << 23);
}

// SwiGLU of one row, n outputs: o[i] = gate[i] * sigmoid(gate[i]) * up[i] in float32, rounded to
// T once (torch_npu npu_swiglu; ascend_ops.reference.activation.swiglu). The one formula of
// norm_act.cpp's swiglu and moe_packed_swiglu.cpp's fused grouped matmul, so both give the same
// bits.
template <typename T>
inline void swiglu_row(const T* gate, const T* up, T* o, int64_t n) {
  const int64_t nv = n - n % 8;
  for (int64_t i = 0; i < nv; i += 8) {
    const v8 g = load8(gate + i);
    store8(o + i, g / (1.0f + exp8(-g)) * load8(up + i));
  }
  for (int64_t i = nv; i < n; ++i) {
    const float g = to_float(gate[i]);
    o[i] = from_float<T>(g / (1.0f + fast_exp(-g)) * to_float(up[i]));
  }
}

#ifdef __AVX512F__
typedef float v16 __attribute__((vector_size(64)));
typedef uint32_t u32x16 __attribute__((vector_size(64)));

inline v16 load16(const float* p) {
  v16 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline v16 load16(const bf16* p) {  // bf16 -> float: one widening load + one 16-bit shift
  const __m512i u = _mm512_slli_epi32(
      _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16);
  return reinterpret_cast<v16>(_mm512_castsi512_ps(u));
}
inline v16 load16(const f16* p) {
#ifdef __F16C__
  const __m512 f = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return reinterpret_cast<v16>(f);
#else
  float t[16];
  for (int j = 0; j < 16; ++j) t[j] = to_float(p[j]);
  return load16(t);
#endif
}
inline v8 low_half(const v16& v) {
  v8 lo;
  std::memcpy(&lo, &v, sizeof(lo));
  return lo;
}
inline v8 high_half(const v16& v) {
  v8 hi;
  std::memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof(hi), sizeof(hi));
  return hi;
}
#else
// Without AVX-512, GCC lowers a 64-byte generic vector kept in an array (the grouped-matmul
// accumulators) piece by piece through the stack: moe_bench.py on an AVX2 EPYC ran the float32
// kernels at ~2 GFLOP/s, 1.5-5.5x behind vLLM's. There a v16 is two 8-lane halves held as
// separate values (registers); lane i is at the same place in memory and each lane sees the same
// operations in the same order, so the kernels' sums are those of the AVX-512 build.
struct v16 {
  v8 lo, hi;
};
inline v16 operator+(const v16& a, const v16& b) { return {a.lo + b.lo, a.hi + b.hi}; }
inline v16 operator*(const v16& a, const v16& b) { return {a.lo * b.lo, a.hi * b.hi}; }
inline v16 operator*(float s, const v16& a) { return {s * a.lo, s * a.hi}; }
inline v16& operator+=(v16& a, const v16& b) {
  a.lo += b.lo;
  a.hi += b.hi;
  return a;
}
inline v16 load16(const float* p) { return {load8(p), load8(p + 8)}; }
inline v16 load16(const bf16* p) { return {load8(p), load8(p + 8)}; }
inline v16 load16(const f16* p) { return {load8(p), load8(p + 8)}; }
inline v8 low_half(const v16& v) { return v.lo; }
inline v8 high_half(const v16& v) { return v.hi; }
#endif

// Sum of the 16 lanes by pairwise halves (a few vector adds instead of 15 serial scalar adds).
inline float hsum(const v16& v) {
  const v8 a = low_half(v) + high_half(v);
  v4 a_lo, a_hi;
  std::memcpy(&a_lo, &a, sizeof(a_lo));
  std::memcpy(&a_hi, reinterpret_cast<const char*>(&a) + sizeof(a_lo), sizeof(a_hi));
  const v4 b = a_lo + a_hi;
  return (b[0] + b[2]) + (b[1] + b[3]);
}

}  // namespace simd
}  // namespace ascend_ops
