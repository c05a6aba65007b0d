// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The vllm-ascend authors
// Grouped matmul on prepacked experts with SwiGLU applied to its output in the same pass: the
// first expert matmul of an MoE layer and its activation (torch_npu npu_grouped_matmul then
// npu_swiglu; ascend_ops.reference.moe.grouped_matmul_swiglu).
//
// The weight [E, K, 2I] holds the gate columns [0, I) then the up columns [I, 2I), packed as in
// moe_packed.cpp (blocks of 32 columns). With I a multiple of 32, gate block b and up block
// I / 32 + b hold the two halves of the same 32 outputs, so one work item takes kItemBlocks / 2
// gate blocks with their up blocks, runs the register tiles of moe_packed_tiles.h into a scratch
// row group on the stack (T, as the plain kernel would store them), and writes only the
// activation: the [M, 2I] product never goes to memory, and no second parallel region runs over
// it (on a 2-core EPYC with OMP_WAIT_POLICY=PASSIVE, waking the second thread cost ~40 us per
// region, the swiglu of 512 x 768 ~90 us). Each output is the same bits as
// swiglu(grouped_matmul_packed(...)): same sums in the same order (moe_packed_tiles.h), the same
// rounding to T, then simd.h's swiglu_row, which norm_act.cpp's swiglu runs too.
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

constexpr int64_t kGatePerItem = kItemBlocks / 2;

template <typename T>
void gmm_packed_swiglu(const T* x, const T* packed, T* out, const std::vector<int64_t>& start,
                       int64_t M, int64_t K, int64_t Kp, int64_t inter) {
  const int64_t experts = int64_t(start.size()) - 1, half = inter / kBlockCols;
  const int64_t block_elems = Kp * kBlockCols;
  const auto items = work_items(start, half, kGatePerItem);  // (expert, first of its gate blocks)
  const int64_t n_items = int64_t(items.size());
  const bool par = n_items > 1 && start[experts] * 2 * inter * K >= (int64_t(1) << 18);
#pragma omp parallel for schedule(dynamic, 1) if (par)
  for (int64_t it = 0; it < n_items; ++it) {
    const int64_t e = items[it].first, nb = items[it].second;
    const int64_t gates = std::min(kGatePerItem, half - nb), nblk = 2 * gates;
    const T* p[kItemBlocks];
    int64_t n0[kItemBlocks];  // columns of the scratch rows: gate blocks, then up blocks
    for (int64_t b = 0; b < gates; ++b) {
      p[b] = packed + (e * 2 * half + nb + b) * block_elems;
      p[gates + b] = packed + (e * 2 * half + half + nb + b) * block_elems;
      n0[b] = b * kBlockCols;
      n0[gates + b] = (gates + b) * kBlockCols;
    }
    const int64_t width = nblk * kBlockCols, cols = gates * kBlockCols;
    T scratch[kGroupRows * kItemBlocks * kBlockCols];  // 16 KB of float32 on AVX-512
    for (int64_t m = start[e]; m < start[e + 1]; m += kGroupRows) {
      const int64_t rows = std::min(kGroupRows, start[e + 1] - m);
      row_group<T>(x + m * K, K, p, scratch, width, n0, nblk, 0, rows);
      for (int64_t r = 0; r < rows; ++r)
        swiglu_row(scratch + r * width, scratch + r * width + cols,
                   out + (m + r) * inter + nb * kBlockCols, cols);
    }
  }
  const T zero = from_float<T>(0.f);
  std::fill(out + start[experts] * inter, out + M * inter, zero);  // rows past the groups
}

}  // namespace

void grouped_matmul_packed_swiglu(uintptr_t x, uintptr_t packed, uintptr_t group_list,
                                  uintptr_t out, int64_t rows, int64_t k, int64_t n,
                                  int64_t experts, int dtype) {
  if (n % (2 * kBlockCols) != 0)
    bad_arg("grouped_matmul_packed_swiglu: N = 2 * I needs I to be a multiple of " +
            std::to_string(kBlockCols) + ", got N = " + std::to_string(n));
  const std::vector<int64_t> start = group_starts(ptr<const int64_t>(group_list), experts, rows);
  dispatch(dtype, "x", [&](auto tag) {
    using T = decltype(tag);
    gmm_packed_swiglu<T>(ptr<const T>(x), ptr<const T>(packed), ptr<T>(out), start, rows, k,
                         padded_k(k, dtype), n / 2);
  });
}

}  // namespace ascend_ops
