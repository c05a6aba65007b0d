// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The vllm-ascend authors
// Shared helpers for the ascend_ops native kernels: dtype codes, per-element bf16/fp16
// conversion (the target CPU has no bf16 instructions), a vectorizable exp, and errors.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef ASCEND_OPS_OPENMP
#include <omp.h>
#endif

namespace ascend_ops {

// Must match DTYPE_CODES in src/ascend_ops/_native.py.
enum DType : int { kF32 = 0, kBF16 = 1, kF16 = 2 };

struct bf16 { uint16_t bits; };
struct f16 { uint16_t bits; };

inline float bits_to_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t float_to_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

inline float to_float(float v) { return v; }
inline float to_float(bf16 v) { return bits_to_float(uint32_t(v.bits) << 16); }
// The conversions below are written with selects instead of branches so loops vectorize.
inline float to_float(f16 v) {  // F. Giesen's half_to_float, with integer selects
  const uint32_t h = v.bits;
  const uint32_t o = ((h & 0x7fffu) << 13) + (112u << 23);
  const uint32_t exp = (h & 0x7c00u) << 13;
  const uint32_t inf_nan = o + (112u << 23);
  const uint32_t sub = float_to_bits(bits_to_float(o + (1u << 23)) - bits_to_float(113u << 23));
  const uint32_t r = exp == (0x7c00u << 13) ? inf_nan : (exp == 0 ? sub : o);
  return bits_to_float(r | ((h & 0x8000u) << 16));
}

template <typename T> inline T from_float(float f);
template <> inline float from_float<float>(float f) { return f; }
template <> inline bf16 from_float<bf16>(float f) {  // round to nearest even, quiet NaN
  const uint32_t u = float_to_bits(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u >> 16) | 0x40u;
  return bf16{uint16_t((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded)};
}
template <> inline f16 from_float<f16>(float f) {  // round to nearest even (F. Giesen's method)
  const uint32_t all = float_to_bits(f);
  const uint32_t sign = all & 0x80000000u;
  const uint32_t u = all ^ sign;
  const uint32_t inf_nan = (u > 0x7f800000u) ? 0x7e00u : 0x7c00u;
  const uint32_t sub = float_to_bits(bits_to_float(u) + 0.5f) - 0x3f000000u;
  const uint32_t normal = (u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13;
  const uint32_t o = u >= 0x47800000u ? inf_nan : (u < 0x38800000u ? sub : normal);
  return f16{uint16_t(o | (sign >> 16))};
}

// fast_exp's three steps, on a float or on a GCC float vector (simd.h's exp8 runs them on 8
// lanes, so both give the same bits): n = round(x / ln 2) by the 1.5 * 2^23 trick (floor()
// would block vectorization), r = x - n ln 2 with ln 2 in two parts, e^r by a polynomial.
template <typename V> inline V exp_round_n(V x) {
  return (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
}
template <typename V> inline V exp_reduce(V x, V n) {
  return (x - n * 0.693359375f) + n * 2.12194440e-4f;
}
template <typename V> inline V exp_poly(V r) {
  V p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.0f;
}

// exp(x) for x <= 0-ish ranges used by softmax; ~2 ulp, branch-free so loops vectorize.
inline float fast_exp(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float n = exp_round_n(x);
  const float p = exp_poly(exp_reduce(x, n));
  const int32_t e = int32_t(n) + 127;
  return p * bits_to_float(uint32_t(e) << 23);
}

[[noreturn]] inline void bad_arg(const std::string& msg) { throw std::invalid_argument(msg); }

template <typename T> inline T* ptr(uintptr_t p) { return reinterpret_cast<T*>(p); }

// Calls f.template operator()<T>() with T the element type for dtype code `dtype`.
template <typename F> inline void dispatch(int dtype, const char* name, F&& f) {
  switch (dtype) {
    case kF32: f(float{}); break;
    case kBF16: f(bf16{}); break;
    case kF16: f(f16{}); break;
    default: bad_arg(std::string(name) + ": unsupported dtype code " + std::to_string(dtype));
  }
}

inline int num_threads() {
#ifdef ASCEND_OPS_OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

}  // namespace ascend_ops
