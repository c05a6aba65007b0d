// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The vllm-ascend authors
// Grouped matmul for small expert groups (MoE decode): out[rows of expert e] = x[rows] @ W[e].
//
// Semantics: torch_npu npu_grouped_matmul with one weight tensor [E, K, N] and per-expert row
// counts (see ascend_ops.reference.moe.grouped_matmul). This kernel takes the weight N-major (each
// expert's [K, N] matrix stored as N rows of K contiguous elements, stride along K = 1), which is
// vLLM's expert layout ([E, N, K] viewed transposed). At decode each expert sees a few rows, so
// the cost is streaming the weights: every work item (expert, block of kColBlock output columns)
// reads its weight rows from memory once (tiles after the first 4 rows find them in cache) and
// computes register tiles of up to 4 rows x 4 columns (float32 accumulation, 16 lanes each).
// While a tile runs, the weight rows of the next tile in the item are prefetched (into L2: on a
// 2-core Xeon that took w2 from ~4.6 to ~4.2 ms at 64 experts x 1 row, float32), and bf16 is
// widened with one AVX-512 zero-extend + shift: together they took bf16 from ~17 to ~20 GB/s (w13)
// and ~12 to ~15 GB/s (w2) at 16 decode tokens on a 2-core EPYC that streams ~30 GB/s; float32
// was unchanged. Work items are spread over OpenMP threads; each output is summed in a fixed
// order (16-lane accumulator, then pairwise halves, then the K tail), whatever the tile size.
#include <algorithm>
#include <utility>

#include "common.h"
#include "kernels.h"
#include "moe_groups.h"
#include "simd.h"

namespace ascend_ops {
namespace {

using namespace simd;

// res[r * C + c] = dot(x row r, w row c) over k in [0, K); x rows are K apart, w rows ldw apart.
// pf (or nullptr): C weight rows, ldw apart, to prefetch while this tile runs (the next tile).
template <typename T, int R, int C>
inline void dot_tile(const T* x, const T* w, int64_t K, int64_t ldw, float* res,
                     const T* pf) {
  v16 acc[R][C] = {};
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    if (pf)
      for (int c = 0; c < C; ++c) __builtin_prefetch(pf + c * ldw + k, 0, 1);
    v16 xv[R];
    for (int r = 0; r < R; ++r) xv[r] = load16(x + r * K + k);
    for (int c = 0; c < C; ++c) {
      const v16 wv = load16(w + c * ldw + k);
      for (int r = 0; r < R; ++r) acc[r][c] += xv[r] * wv;
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      float s = hsum(acc[r][c]);
      for (int64_t kk = k; kk < K; ++kk) s += to_float(x[r * K + kk]) * to_float(w[c * ldw + kk]);
      res[r * C + c] = s;
    }
  }
}

// Largest register tile (rows x columns, one v16 accumulator each, plus R x and C weight
// vectors): 4 x 4 fills AVX-512's 32 zmm registers. On AVX2 a v16 takes two of the 16 ymm
// registers, so 4 x 4 spills the accumulators to the stack on every k step; 2 x 2 is 8 + 4 + 4 =
// 16 halves (one thread on an AVX2 EPYC, 8 experts x 8 rows of a 1024 x 768 float32 weight:
// 4.1-4.3 ms against 7.1-7.2 ms with 4 x 4 tiles; at one row 4 x 4 was ~10 % faster).
#ifdef __AVX512F__
constexpr int kTileRows = 4, kTileCols = 4;
#else
constexpr int kTileRows = 2, kTileCols = 2;
#endif

// out[r, n] for R rows and columns [n0, n1); out rows are N apart.
template <typename T, int R>
inline void row_tile(const T* x, const T* w, int64_t K, int64_t ldw, int64_t n0, int64_t n1,
                     T* out, int64_t N) {
  constexpr int C = kTileCols;
  float res[R * C];
  int64_t n = n0;
  for (; n + C <= n1; n += C) {
    const T* pf = n + 2 * C <= n1 ? w + (n + C) * ldw : nullptr;
    dot_tile<T, R, C>(x, w + n * ldw, K, ldw, res, pf);
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) out[r * N + n + c] = from_float<T>(res[r * C + c]);
  }
  for (; n < n1; ++n) {
    dot_tile<T, R, 1>(x, w + n * ldw, K, ldw, res, nullptr);
    for (int r = 0; r < R; ++r) out[r * N + n] = from_float<T>(res[r]);
  }
}

constexpr int64_t kColBlock = 32;

template <typename T>
void gmm_nmajor(const T* x, const T* w, T* out, const std::vector<int64_t>& start, int64_t M,
                int64_t K, int64_t N, int64_t stride_e, int64_t stride_n) {
  const int64_t experts = int64_t(start.size()) - 1;
  std::vector<std::pair<int64_t, int64_t>> items;  // (expert, first column)
  for (int64_t e = 0; e < experts; ++e)
    if (start[e + 1] > start[e])
      for (int64_t n0 = 0; n0 < N; n0 += kColBlock) items.emplace_back(e, n0);
  const int64_t n_items = int64_t(items.size());
  const bool par = n_items > 1 && start[experts] * N * K >= (int64_t(1) << 18);
#pragma omp parallel for schedule(dynamic, 1) if (par)
  for (int64_t it = 0; it < n_items; ++it) {
    const int64_t e = items[it].first, n0 = items[it].second;
    const int64_t n1 = std::min(N, n0 + kColBlock);
    const T* we = w + e * stride_e;
    int64_t m = start[e];
    const int64_t m1 = start[e + 1];
    if constexpr (kTileRows >= 4)
      for (; m + 4 <= m1; m += 4)
        row_tile<T, 4>(x + m * K, we, K, stride_n, n0, n1, out + m * N, N);
    for (; m + 2 <= m1; m += 2) row_tile<T, 2>(x + m * K, we, K, stride_n, n0, n1, out + m * N, N);
    for (; m < m1; ++m) row_tile<T, 1>(x + m * K, we, K, stride_n, n0, n1, out + m * N, N);
  }
  const T zero = from_float<T>(0.f);
  std::fill(out + start[experts] * N, out + M * N, zero);  // rows past the groups
}

}  // namespace

void grouped_matmul(uintptr_t x, uintptr_t weight, uintptr_t group_list, uintptr_t out,
                    int64_t rows, int64_t k, int64_t n, int64_t experts, int64_t stride_e,
                    int64_t stride_n, int dtype) {
  const std::vector<int64_t> start = group_starts(ptr<const int64_t>(group_list), experts, rows);
  dispatch(dtype, "x", [&](auto tag) {
    using T = decltype(tag);
    gmm_nmajor<T>(ptr<const T>(x), ptr<const T>(weight), ptr<T>(out), start, rows, k, n, stride_e,
                  stride_n);
  });
}

}  // namespace ascend_ops
