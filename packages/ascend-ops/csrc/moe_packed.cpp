// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The vllm-ascend authors
// Grouped matmul on prepacked expert weights (MoE decode on the native CPU backend).
//
// Semantics: those of moe.cpp's grouped_matmul (torch_npu npu_grouped_matmul, one weight tensor
// [E, K, N], per-expert row counts; ascend_ops.reference.moe.grouped_matmul). Only the weight's
// memory layout differs; the plain weight stays the source of truth (ascend_ops._native_moe packs
// it and rebuilds the pack when the weight is rewritten).
//
// Packed layout: each expert's N output columns are cut into blocks of kBlockCols = 32; a block
// holds its K x 32 weights contiguously, k-major:
//   float32 / float16: P[e][nb][k][j]         = W[e][k][nb * 32 + j]
//   bfloat16:          P[e][nb][k / 2][j][k % 2] (pairs of k, the operand order of AVX512-BF16's
//                      vdpbf16ps; K is padded to even)
// with N padded to a multiple of 32 (padding is zero). One work item (expert, up to kItemBlocks
// adjacent column blocks) then reads contiguous streams of K * 32 weights instead of the N-major
// kernel's four short rows at a time (moe.cpp), with a software prefetch kAhead k ahead into L2;
// small tiles read several blocks side by side (more streams in flight: on a 2-core AVX2 EPYC a
// read loop over two or four interleaved streams reached ~10-15% more bandwidth than over one,
// and moe_bench.py's float32 layer at 1-16 tokens went from 1.11-1.22x to 1.00-1.12x of vLLM's
// time). An expert whose rows need several register tiles runs them k chunk by k chunk, so its
// weights stream from memory once (expert_rows). Each output's sum runs in one order whatever
// tile computes it. Each x element is broadcast against 32 columns (two 16-lane accumulators per
// row, register tiles of up to 8 rows on AVX-512, 4 elsewhere); bf16 uses vdpbf16ps where the CPU
// has AVX512-BF16. Accumulation is float32, in chunks of 16 k summed into a running total, so
// each output is a fixed-order sum with the rounding error of a 16-term plus a K/16-term sum (the
// N-major kernel's is similar). Measured on a 2-core Xeon (AVX-512, AMX) with weights streamed
// from memory: bf16 w2 ~20% faster than the N-major kernel, w13 about equal; float32 about equal
// (benchmarks/README.md, moe_bench.py).
#include <algorithm>
#include <utility>
#include <vector>

#include "common.h"
#include "kernels.h"
#include "moe_groups.h"
#include "moe_packed_tiles.h"

namespace ascend_ops {
namespace {

using namespace packed;

template <typename T>
void pack_block(const T* w, T* p, int64_t K, int64_t Kp, int64_t N, int64_t nb, int64_t stride_k,
                int64_t stride_n, bool pairs) {
  const T zero = from_float<T>(0.f);
  for (int64_t k = 0; k < Kp; ++k)
    for (int64_t j = 0; j < kBlockCols; ++j) {
      const int64_t n = nb * kBlockCols + j;
      const T v = (k < K && n < N) ? w[k * stride_k + n * stride_n] : zero;
      const int64_t at = pairs ? (k / 2) * 2 * kBlockCols + j * 2 + (k % 2) : k * kBlockCols + j;
      p[at] = v;
    }
}

template <typename T>
void gmm_packed(const T* x, const T* packed, T* out, const std::vector<int64_t>& start, int64_t M,
                int64_t K, int64_t Kp, int64_t N) {
  const int64_t experts = int64_t(start.size()) - 1, blocks = col_blocks(N);
  const int64_t block_elems = Kp * kBlockCols;
  const auto items = work_items(start, blocks, kItemBlocks);  // (expert, first of its blocks)
  const int64_t n_items = int64_t(items.size());
  const bool par = n_items > 1 && start[experts] * N * K >= (int64_t(1) << 18);
#pragma omp parallel for schedule(dynamic, 1) if (par)
  for (int64_t it = 0; it < n_items; ++it) {
    const int64_t e = items[it].first, nb = items[it].second;
    const int64_t nblk = std::min(kItemBlocks, blocks - nb);
    const T* p[kItemBlocks];
    int64_t n0[kItemBlocks];
    for (int64_t b = 0; b < nblk; ++b) {
      p[b] = packed + (e * blocks + nb + b) * block_elems;
      n0[b] = (nb + b) * kBlockCols;
    }
    expert_rows<T>(x, K, p, out, N, n0, nblk, start[e], start[e + 1]);
  }
  const T zero = from_float<T>(0.f);
  std::fill(out + start[experts] * N, out + M * N, zero);  // rows past the groups
}

}  // namespace

int64_t grouped_weight_packed_size(int64_t experts, int64_t k, int64_t n, int dtype) {
  return experts * col_blocks(n) * padded_k(k, dtype) * kBlockCols;
}

void pack_grouped_weight(uintptr_t weight, uintptr_t packed, int64_t experts, int64_t k, int64_t n,
                         int64_t stride_e, int64_t stride_k, int64_t stride_n, int dtype) {
  const int64_t Kp = padded_k(k, dtype), blocks = col_blocks(n);
  dispatch(dtype, "weight", [&](auto tag) {
    using T = decltype(tag);
    const T* w = ptr<const T>(weight);
    T* p = ptr<T>(packed);
#pragma omp parallel for schedule(static)
    for (int64_t eb = 0; eb < experts * blocks; ++eb) {
      const int64_t e = eb / blocks, nb = eb % blocks;
      pack_block<T>(w + e * stride_e, p + eb * Kp * kBlockCols, k, Kp, n, nb, stride_k, stride_n,
                    dtype == kBF16);
    }
  });
}

void grouped_matmul_packed(uintptr_t x, uintptr_t packed, uintptr_t group_list, uintptr_t out,
                           int64_t rows, int64_t k, int64_t n, int64_t experts, int dtype) {
  const std::vector<int64_t> start = group_starts(ptr<const int64_t>(group_list), experts, rows);
  dispatch(dtype, "x", [&](auto tag) {
    using T = decltype(tag);
    gmm_packed<T>(ptr<const T>(x), ptr<const T>(packed), ptr<T>(out), start, rows, k,
                  padded_k(k, dtype), n);
  });
}

}  // namespace ascend_ops
