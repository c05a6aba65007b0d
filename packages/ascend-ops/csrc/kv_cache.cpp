// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The vllm-ascend authors
// reshape_and_cache: scatter [T, Hk, D] key/value rows into strided paged caches
// [num_blocks, block_size, Hk, D]. All slots are validated before the first write.
#include "common.h"
#include "kernels.h"

namespace ascend_ops {

void reshape_and_cache(uintptr_t key, uintptr_t value, uintptr_t key_cache, uintptr_t value_cache,
                       uintptr_t slot_mapping, int64_t tokens, int64_t kv_heads, int64_t head_dim,
                       const std::vector<int64_t>& ks, const std::vector<int64_t>& vs,
                       const std::vector<int64_t>& kcs, const std::vector<int64_t>& vcs,
                       int64_t num_blocks, int64_t block_size, int dtype) {
  if (ks.size() != 3 || vs.size() != 3) bad_arg("key/value: expected 3 strides");
  if (kcs.size() != 4 || vcs.size() != 4) bad_arg("key_cache/value_cache: expected 4 strides");
  const int64_t* slots = ptr<const int64_t>(slot_mapping);
  const int64_t capacity = num_blocks * block_size;
  for (int64_t t = 0; t < tokens; ++t) {
    if (slots[t] >= capacity)
      bad_arg("slot_mapping[" + std::to_string(t) + "]=" + std::to_string(slots[t]) +
              " >= cache capacity " + std::to_string(capacity) + " (num_blocks * block_size)");
  }
  dispatch(dtype, "key", [&](auto tag) {
    using T = decltype(tag);
    const T* k = ptr<const T>(key);
    const T* v = ptr<const T>(value);
    T* kc = ptr<T>(key_cache);
    T* vc = ptr<T>(value_cache);
    const bool par = tokens * kv_heads * head_dim >= (1 << 20);
#pragma omp parallel for schedule(static) if (par)
    for (int64_t t = 0; t < tokens; ++t) {
      const int64_t s = slots[t];
      if (s < 0) continue;  // padding token
      const int64_t blk = s / block_size, off = s % block_size;
      for (int64_t h = 0; h < kv_heads; ++h) {
        const T* ksrc = k + t * ks[0] + h * ks[1];
        const T* vsrc = v + t * vs[0] + h * vs[1];
        T* kdst = kc + blk * kcs[0] + off * kcs[1] + h * kcs[2];
        T* vdst = vc + blk * vcs[0] + off * vcs[1] + h * vcs[2];
        for (int64_t d = 0; d < head_dim; ++d) {
          kdst[d * kcs[3]] = ksrc[d * ks[2]];
          vdst[d * vcs[3]] = vsrc[d * vs[2]];
        }
      }
    }
  });
}

}  // namespace ascend_ops
