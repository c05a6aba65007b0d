// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The vllm-ascend authors
// Per-expert row ranges of a grouped matmul (moe.cpp, moe_packed.cpp): group_list row counts ->
// start offsets, validated (torch_npu npu_grouped_matmul with group_list_type=1: counts).
#pragma once

#include <string>
#include <vector>

#include "common.h"

namespace ascend_ops {

// start[e] .. start[e + 1] are expert e's rows; ValueError for a negative count or counts that
// sum past the rows of x.
inline std::vector<int64_t> group_starts(const int64_t* counts, int64_t experts, int64_t rows) {
  std::vector<int64_t> start(experts + 1, 0);
  for (int64_t e = 0; e < experts; ++e) {
    if (counts[e] < 0) bad_arg("group_list: row counts must be >= 0");
    start[e + 1] = start[e] + counts[e];
  }
  if (start[experts] > rows)
    bad_arg("group_list: row counts sum to " + std::to_string(start[experts]) +
            ", more than the " + std::to_string(rows) + " rows of x");
  return start;
}

}  // namespace ascend_ops
