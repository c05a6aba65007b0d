// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The vllm-ascend authors
// Register tiles of the packed grouped matmul (moe_packed.cpp: layout, semantics, measurements),
// shared by its plain entry and the one that applies SwiGLU to its output (moe_packed_swiglu.cpp).
#pragma once

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "common.h"
#include "simd.h"

namespace ascend_ops {
namespace packed {

using namespace simd;

constexpr int64_t kBlockCols = 32;
constexpr int64_t kChunk = 16;  // k per partial sum
constexpr int64_t kAhead = 64;  // software prefetch distance in k (8 KB of float32 weights)
// Rows per register tile of the full tiles (R rows x 32 columns = 2R v16 accumulators, plus 2R
// running totals that are touched once per kChunk k).
// * AVX-512 (32 zmm registers): 8. With 4-row tiles an expert of 8 rows streamed each block from
//   memory once and then again from L2 for its second tile, with no memory traffic in flight
//   meanwhile: moe_bench.py's float32 layer at 64 tokens (8 rows per expert) ran 1.20x vLLM's on a
//   2-core AVX-512 EPYC, its grouped matmuls at 22-25 GB/s against 36-46 GB/s at one row.
// * other builds: 4. A v16 is two of AVX2's 16 ymm registers (simd.h), so some accumulators
//   already live on the stack, and it is still faster than 2 rows, which streams each block from
//   L2 twice as often (one thread, 8 experts: 4 rows per expert of a 576 x 3072 weight 3.4-3.6 ms
//   against 4.9-5.3 ms with 2-row tiles, 8 rows 0.2-1.9 ms faster, 1 row within 10 %; an AVX2
//   EPYC).
#ifdef __AVX512F__
constexpr int kTileRows = 8;
#else
constexpr int kTileRows = 4;
#endif
// Weight streams in flight per thread: a work item is one expert's kItemBlocks adjacent column
// blocks, and the rows left after the full tiles read up to side_by_side(R) of those blocks at
// once (the hardware prefetcher then keeps more lines in flight: on a 2-core AVX2 EPYC a read loop
// over two or four interleaved streams reached ~10-15% more bandwidth than over one). The limit is
// the registers: R x 2 x blocks accumulators, at most 16 (plus as many running totals).
#ifdef __AVX512F__
constexpr int64_t kItemBlocks = 4;
constexpr int side_by_side(int rows) { return rows <= 2 ? 4 : (rows <= 4 ? 2 : 1); }
#else
constexpr int64_t kItemBlocks = 2;
constexpr int side_by_side(int rows) { return rows <= 2 ? 2 : 1; }  // 16 ymm registers
#endif
// Most rows whose tiles take turns on one k chunk (expert_rows): their running totals, kGroupRows x
// 2 x kItemBlocks vectors, live on the stack.
constexpr int64_t kGroupRows = 4 * kTileRows;

inline int64_t padded_k(int64_t k, int dtype) { return dtype == kBF16 ? (k + 1) / 2 * 2 : k; }
inline int64_t col_blocks(int64_t n) { return (n + kBlockCols - 1) / kBlockCols; }

// Accumulate R rows x 32 columns over k in [k0, k1) of NB float32 / float16 blocks read side by
// side (acc[r][2 * b + h]: block b, half h).
template <typename T, int R, int NB>
inline void chunk_plain(const T* x, int64_t K, const T* const* p, int64_t k0, int64_t k1,
                        v16 (&acc)[R][2 * NB]) {
  for (int64_t k = k0; k < k1; ++k) {
    for (int b = 0; b < NB; ++b) {
      __builtin_prefetch(p[b] + (k + kAhead) * kBlockCols, 0, 1);
      __builtin_prefetch(p[b] + (k + kAhead) * kBlockCols + 16, 0, 1);
      const v16 w0 = load16(p[b] + k * kBlockCols), w1 = load16(p[b] + k * kBlockCols + 16);
      for (int r = 0; r < R; ++r) {
        const float xs = to_float(x[r * K + k]);
        acc[r][2 * b] += xs * w0;
        acc[r][2 * b + 1] += xs * w1;
      }
    }
  }
}

// bf16 pair block: lane j of a 32-bit word holds k (low half) and k + 1 (high half) of column j.
inline void widen_pair(const bf16* p, v16& lo, v16& hi) {
#ifdef __AVX512F__
  u32x16 u;
  std::memcpy(&u, p, sizeof(u));
  const u32x16 a = u << 16, b = u & 0xffff0000u;
  std::memcpy(&lo, &a, sizeof(lo));
  std::memcpy(&hi, &b, sizeof(hi));
#else  // simd.h's two-half v16
  u32x8 u0, u1;
  std::memcpy(&u0, p, sizeof(u0));
  std::memcpy(&u1, p + 16, sizeof(u1));
  lo = {as_f(u0 << 16), as_f(u1 << 16)};
  hi = {as_f(u0 & 0xffff0000u), as_f(u1 & 0xffff0000u)};
#endif
}

template <int R, int NB>
inline void chunk_pairs(const bf16* x, int64_t K, const bf16* const* p, int64_t k0, int64_t k1,
                        v16 (&acc)[R][2 * NB]) {
  // k0 is even; pairs [k, k + 1) with k + 1 < K run two k at once, an odd K's last k alone.
  int64_t k = k0;
  for (; k + 1 < k1; k += 2) {
    for (int b = 0; b < NB; ++b) {
      const bf16* pk = p[b] + k * kBlockCols;  // (k / 2) * 2 * 32
      __builtin_prefetch(pk + 2 * kAhead * kBlockCols, 0, 1);
      __builtin_prefetch(pk + 2 * kAhead * kBlockCols + 32, 0, 1);
#ifdef __AVX512BF16__
      const __m512bh wa = (__m512bh)_mm512_loadu_si512(pk);
      const __m512bh wb = (__m512bh)_mm512_loadu_si512(pk + 32);
      for (int r = 0; r < R; ++r) {
        uint32_t pair;
        std::memcpy(&pair, x + r * K + k, sizeof(pair));
        const __m512bh xb = (__m512bh)_mm512_set1_epi32(int(pair));
        acc[r][2 * b] = (v16)_mm512_dpbf16_ps((__m512)acc[r][2 * b], xb, wa);
        acc[r][2 * b + 1] = (v16)_mm512_dpbf16_ps((__m512)acc[r][2 * b + 1], xb, wb);
      }
#else
      v16 a_lo, a_hi, b_lo, b_hi;
      widen_pair(pk, a_lo, a_hi);
      widen_pair(pk + 32, b_lo, b_hi);
      for (int r = 0; r < R; ++r) {
        const float x0 = to_float(x[r * K + k]), x1 = to_float(x[r * K + k + 1]);
        acc[r][2 * b] += x0 * a_lo + x1 * a_hi;
        acc[r][2 * b + 1] += x0 * b_lo + x1 * b_hi;
      }
#endif
    }
  }
  if (k < k1) {  // K odd: the pair's second half is the zero padding
    for (int b = 0; b < NB; ++b) {
      v16 a_lo, a_hi, b_lo, b_hi;
      widen_pair(p[b] + k * kBlockCols, a_lo, a_hi);
      widen_pair(p[b] + k * kBlockCols + 32, b_lo, b_hi);
      for (int r = 0; r < R; ++r) {
        const float x0 = to_float(x[r * K + k]);
        acc[r][2 * b] += x0 * a_lo;
        acc[r][2 * b + 1] += x0 * b_lo;
      }
    }
  }
}

template <typename T, int R, int NB>
inline void chunk(const T* x, int64_t K, const T* const* p, int64_t k0, int64_t k1,
                  v16 (&acc)[R][2 * NB]) {
  if constexpr (std::is_same_v<T, bf16>)
    chunk_pairs<R, NB>(x, K, p, k0, k1, acc);
  else
    chunk_plain<T, R, NB>(x, K, p, k0, k1, acc);
}

// Running totals tot[r * stride + 2 * b + h] (row r, block b, half h) to out[r][n0[b] + j].
template <typename T>
void store_totals(const v16* tot, int64_t stride, int64_t rows, int64_t nblk, T* out, int64_t N,
                  const int64_t* n0) {
  for (int64_t b = 0; b < nblk; ++b) {
    const int64_t cols = std::min(kBlockCols, N - n0[b]);
    for (int64_t r = 0; r < rows; ++r) {
      float res[kBlockCols];
      std::memcpy(res, &tot[r * stride + 2 * b], sizeof(v16));
      std::memcpy(res + 16, &tot[r * stride + 2 * b + 1], sizeof(v16));
      for (int64_t j = 0; j < cols; ++j) out[r * N + n0[b] + j] = from_float<T>(res[j]);
    }
  }
}

// out[r][n0[b] + j] for R rows of x (K apart) against NB column blocks p[b] read side by side,
// running totals in registers; out rows are N apart. Each output's sum runs in the same order
// whatever R and NB are, and whichever of block_tile and chunk_over_blocks computes it.
template <typename T, int R, int NB>
void block_tile(const T* x, int64_t K, const T* const* p, T* out, int64_t N, const int64_t* n0) {
  v16 tot[R][2 * NB] = {};
  for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
    v16 acc[R][2 * NB] = {};
    chunk<T, R, NB>(x, K, p, k0, k0 + std::min(kChunk, K - k0), acc);
    for (int r = 0; r < R; ++r)
      for (int h = 0; h < 2 * NB; ++h) tot[r][h] += acc[r][h];
  }
  store_totals<T>(&tot[0][0], 2 * NB, R, NB, out, N, n0);
}

// R rows against the nblk column blocks p[0..nblk), G blocks side by side at a time (fewer for
// the last ones).
template <typename T, int R, int G>
void rows_over_blocks(const T* x, int64_t K, const T* const* p, T* out, int64_t N,
                      const int64_t* n0, int64_t nblk) {
  int64_t b = 0;
  for (; b + G <= nblk; b += G) block_tile<T, R, G>(x, K, p + b, out, N, n0 + b);
  if constexpr (G > 1)
    if (b < nblk) rows_over_blocks<T, R, G - 1>(x, K, p + b, out, N, n0 + b, nblk - b);
}

// One k chunk [k0, k1) of R rows against the nblk blocks p[0..nblk), G side by side at a time,
// added to the running totals in memory (tot as in store_totals).
template <typename T, int R, int G>
void chunk_over_blocks(const T* x, int64_t K, const T* const* p, int64_t k0, int64_t k1, v16* tot,
                       int64_t stride, int64_t nblk) {
  int64_t b = 0;
  for (; b + G <= nblk; b += G) {
    v16 acc[R][2 * G] = {};
    chunk<T, R, G>(x, K, p + b, k0, k1, acc);
    for (int r = 0; r < R; ++r)
      for (int h = 0; h < 2 * G; ++h) tot[r * stride + 2 * b + h] += acc[r][h];
  }
  if constexpr (G > 1)
    if (b < nblk) chunk_over_blocks<T, R, G - 1>(x, K, p + b, k0, k1, tot + 2 * b, stride, nblk - b);
}

// Calls f(std::integral_constant<int, R>{}, r0) for each register tile of an expert's rows
// [0, rows): full kTileRows tiles, then (AVX-512) a 4-row tile, then the last 1-3 rows.
template <typename F>
int64_t for_each_tile(int64_t rows, F&& f) {
  int64_t r = 0, tiles = 0;
  for (; r + kTileRows <= rows; r += kTileRows, ++tiles) f(std::integral_constant<int, kTileRows>{}, r);
#ifdef __AVX512F__
  if (rows - r >= 4) {
    f(std::integral_constant<int, 4>{}, r);
    r += 4;
    ++tiles;
  }
#endif
  switch (rows - r) {
    case 3: f(std::integral_constant<int, 3>{}, r); return tiles + 1;
    case 2: f(std::integral_constant<int, 2>{}, r); return tiles + 1;
    case 1: f(std::integral_constant<int, 1>{}, r); return tiles + 1;
    default: return tiles;
  }
}

// Rows [m, m1) (at most kGroupRows) of one expert against its nblk column blocks p[0..nblk), each
// register tile of R rows over side_by_side(R) blocks at a time. One tile: its totals stay in
// registers (block_tile). More tiles: k chunk by chunk, every tile takes its turn on the chunk,
// which the first tile brought into L1, so the weights stream from memory once, all blocks of the
// item in flight (with one full pass per tile, an expert of 8 + 4 rows read its weights from
// memory in the first pass and from L2 in the second, memory idle meanwhile); totals on the stack.
template <typename T>
void row_group(const T* x, int64_t K, const T* const* p, T* out, int64_t N, const int64_t* n0,
               int64_t nblk, int64_t m, int64_t m1) {
  const int64_t rows = m1 - m;
  const T* xm = x + m * K;
  T* om = out + m * N;
  const auto one_tile = [&](auto tile, int64_t r) {
    constexpr int R = decltype(tile)::value;
    rows_over_blocks<T, R, side_by_side(R)>(xm + r * K, K, p, om + r * N, N, n0, nblk);
  };
  int64_t tiles = 0;
  for_each_tile(rows, [&](auto, int64_t) { ++tiles; });
  if (tiles <= 1) {
    for_each_tile(rows, one_tile);
    return;
  }
  v16 totals[kGroupRows * 2 * kItemBlocks];  // 16 KB on AVX-512
  const int64_t stride = 2 * nblk;
  std::fill(totals, totals + rows * stride, v16{});
  for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
    const int64_t k1 = k0 + std::min(kChunk, K - k0);
    for_each_tile(rows, [&](auto tile, int64_t r) {
      constexpr int R = decltype(tile)::value;
      chunk_over_blocks<T, R, side_by_side(R)>(xm + r * K, K, p, k0, k1, totals + r * stride,
                                               stride, nblk);
    });
  }
  store_totals<T>(totals, stride, rows, nblk, om, N, n0);
}

// Rows [m, m1) of one expert: row_group on groups of up to kGroupRows rows (an expert can hold
// many more rows than a decode step gives it; each group streams the blocks once).
template <typename T>
void expert_rows(const T* x, int64_t K, const T* const* p, T* out, int64_t N, const int64_t* n0,
                 int64_t nblk, int64_t m, int64_t m1) {
  for (int64_t g = m; g < m1; g += kGroupRows)
    row_group<T>(x, K, p, out, N, n0, nblk, g, std::min(m1, g + kGroupRows));
}


// The work items of a packed grouped matmul: (expert, first column block) for every expert with
// rows (start[e + 1] > start[e]) and first = 0, step, 2 * step, ... below blocks.
inline std::vector<std::pair<int64_t, int64_t>> work_items(const std::vector<int64_t>& start,
                                                           int64_t blocks, int64_t step) {
  std::vector<std::pair<int64_t, int64_t>> items;
  for (int64_t e = 0; e + 1 < int64_t(start.size()); ++e)
    if (start[e + 1] > start[e])
      for (int64_t nb = 0; nb < blocks; nb += step) items.emplace_back(e, nb);
  return items;
}

}  // namespace packed
}  // namespace ascend_ops
