// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The vllm-ascend authors
// RMSNorm, fused add + RMSNorm and SwiGLU over contiguous [rows, hidden] buffers (float32 math).
#include "common.h"
#include "kernels.h"
#include "simd.h"

namespace ascend_ops {
namespace {

// Vector main loops (simd.h: widening loads / narrowing stores, bit-identical to to_float /
// from_float) with scalar tails; g++ leaves the plain loops scalar for bf16 / fp16 (the
// conversions' selects read as control flow). The sum of squares is the same omp simd reduction.
template <typename T, typename W>
void rms_norm_rows(const T* x, const W* w, T* out, int64_t rows, int64_t h, float eps,
                   const T* residual, T* new_residual) {
  using namespace simd;
  const bool par = rows * h >= (1 << 17) && rows > 1;  // fork only when it pays
  const int64_t hv = h - h % 8;
#pragma omp parallel if (par)
  {
  std::vector<float> buf(h);
#pragma omp for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * h;
    float ss = 0.f;
    if (residual) {
      const T* rr = residual + r * h;
      T* nr = new_residual + r * h;
      for (int64_t i = 0; i < hv; i += 8) {
        store8(nr + i, load8(xr + i) + load8(rr + i));  // rounded like torch
        store8(buf.data() + i, load8(nr + i));
      }
      for (int64_t i = hv; i < h; ++i) {
        const T s = from_float<T>(to_float(xr[i]) + to_float(rr[i]));
        nr[i] = s;
        buf[i] = to_float(s);
      }
    } else {
      for (int64_t i = 0; i < hv; i += 8) store8(buf.data() + i, load8(xr + i));
      for (int64_t i = hv; i < h; ++i) buf[i] = to_float(xr[i]);
    }
#pragma omp simd reduction(+ : ss)
    for (int64_t i = 0; i < h; ++i) ss += buf[i] * buf[i];
    const float rstd = 1.0f / std::sqrt(ss / float(h) + eps);
    T* o = out + r * h;
    for (int64_t i = 0; i < hv; i += 8) store8(o + i, load8(buf.data() + i) * rstd * load8(w + i));
    for (int64_t i = hv; i < h; ++i) o[i] = from_float<T>(buf[i] * rstd * to_float(w[i]));
  }
  }
}

template <typename T>
void rms_any_weight(uintptr_t x, uintptr_t w, uintptr_t out, int64_t rows, int64_t h, int w_dtype,
                    float eps, uintptr_t residual, uintptr_t new_residual) {
  dispatch(w_dtype, "weight", [&](auto wtag) {
    using W = decltype(wtag);
    rms_norm_rows<T, W>(ptr<const T>(x), ptr<const W>(w), ptr<T>(out), rows, h, eps,
                        ptr<const T>(residual), ptr<T>(new_residual));
  });
}

}  // namespace

void rms_norm(uintptr_t x, uintptr_t w, uintptr_t out, int64_t rows, int64_t hidden, int dtype,
              int w_dtype, double eps) {
  dispatch(dtype, "x", [&](auto tag) {
    rms_any_weight<decltype(tag)>(x, w, out, rows, hidden, w_dtype, float(eps), 0, 0);
  });
}

void add_rms_norm(uintptr_t x, uintptr_t residual, uintptr_t w, uintptr_t out,
                  uintptr_t new_residual, int64_t rows, int64_t hidden, int dtype, int w_dtype,
                  double eps) {
  dispatch(dtype, "x", [&](auto tag) {
    rms_any_weight<decltype(tag)>(x, w, out, rows, hidden, w_dtype, float(eps), residual,
                                  new_residual);
  });
}

void swiglu(uintptr_t x, uintptr_t out, int64_t rows, int64_t inter, int dtype) {
  dispatch(dtype, "x", [&](auto tag) {
    using T = decltype(tag);
    const T* xp = ptr<const T>(x);
    T* op = ptr<T>(out);
    const bool par = rows * inter >= (1 << 17) && rows > 1;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t r = 0; r < rows; ++r) {
      const T* gate = xp + r * 2 * inter;
      simd::swiglu_row(gate, gate + inter, op + r * inter, inter);
    }
  });
}

}  // namespace ascend_ops
