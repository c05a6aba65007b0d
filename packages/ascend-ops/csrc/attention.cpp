// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The vllm-ascend authors
// Paged attention with npu_fused_infer_attention_score semantics (TND query, paged KV):
// prefill, chunked prefill, prefix hits and decode in one call; GQA/MQA; causal aligned to the
// end of each request's KV. Flash-style online softmax in float32 with register-blocked
// 4-row x 16-column micro-kernels; a float32 cache with contiguous head_dim is read in place,
// bf16/fp16 caches are converted per element into float tiles.
#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "common.h"
#include "kernels.h"
#include "simd.h"

namespace ascend_ops {
namespace {

constexpr int64_t kRows = 4;     // query rows per micro-kernel
constexpr int64_t kLanes = 16;   // keys / head-dim lanes per micro-kernel
constexpr int64_t kQTile = 16;   // queries per work item

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

struct Work {
  int64_t b, kh, q0, q1;
};

struct Shape {
  int64_t hq, hk, d, dp, group, bs, bsp, bt_stride;
  const int64_t *kcs, *vcs;
  float scale;
  bool causal;
  bool in_place;  // K/V rows read from the cache itself (float32 use only; see run_work)
};

using simd::load16;
using simd::v16;

inline void store16(float* p, const v16& v) { std::memcpy(p, &v, sizeof(v)); }

// Sum of the 16 lanes without going through memory (simd::hsum takes its argument's address,
// which kept scores_rowmajor's accumulators on the stack).
inline float lane_sum(v16 v) {
#ifdef __AVX512F__
  return _mm512_reduce_add_ps(reinterpret_cast<__m512>(v));
#else
  return simd::hsum(v);
#endif
}

// The micro-kernels keep their 4 x 16 running sums in vector values (registers): written as
// float arrays, GCC kept them on the stack and every key's update went through a store and a
// reload (~60 ns per key and KV head at decode on an AVX-512 EPYC, 4-5x the arithmetic).

// S[r][n] = sum_d Q[r][d] * KT[d][n] for 4 rows and 16 columns at a time.
inline void scores(const float* q, const float* kt, float* s, int64_t rows_pad, int64_t dp,
                   int64_t bsp, int64_t ncols) {
  for (int64_t r0 = 0; r0 < rows_pad; r0 += kRows) {
    const float* q0 = q + (r0 + 0) * dp;
    const float* q1 = q + (r0 + 1) * dp;
    const float* q2 = q + (r0 + 2) * dp;
    const float* q3 = q + (r0 + 3) * dp;
    for (int64_t n0 = 0; n0 < ncols; n0 += kLanes) {
      v16 a0{}, a1{}, a2{}, a3{};
      for (int64_t d = 0; d < dp; ++d) {
        const v16 k = load16(kt + d * bsp + n0);
        a0 += q0[d] * k;
        a1 += q1[d] * k;
        a2 += q2[d] * k;
        a3 += q3[d] * k;
      }
      store16(s + (r0 + 0) * bsp + n0, a0);
      store16(s + (r0 + 1) * bsp + n0, a1);
      store16(s + (r0 + 2) * bsp + n0, a2);
      store16(s + (r0 + 3) * bsp + n0, a3);
    }
  }
}

// Decode-sized tiles (few rows): S[r][n] = dot(Q[r], K[n]) over a row-major float K tile, which
// converts contiguously instead of transposing every key. Lane j of a row's vector sums the
// products at d = j, j + 16, ...; the 16 lanes are then added pairwise (lane_sum).
inline void scores_rowmajor(const float* q, const float* k, int64_t k_stride, float* s,
                            int64_t rows_pad, int64_t dp, int64_t bsp, int64_t nvalid) {
  for (int64_t r0 = 0; r0 < rows_pad; r0 += kRows) {
    const float* q0 = q + (r0 + 0) * dp;
    const float* q1 = q + (r0 + 1) * dp;
    const float* q2 = q + (r0 + 2) * dp;
    const float* q3 = q + (r0 + 3) * dp;
    for (int64_t n = 0; n < nvalid; ++n) {
      const float* kk = k + n * k_stride;
      v16 a0{}, a1{}, a2{}, a3{};
      for (int64_t x = 0; x < dp; x += kLanes) {
        const v16 kv = load16(kk + x);
        a0 += load16(q0 + x) * kv;
        a1 += load16(q1 + x) * kv;
        a2 += load16(q2 + x) * kv;
        a3 += load16(q3 + x) * kv;
      }
      s[(r0 + 0) * bsp + n] = lane_sum(a0);
      s[(r0 + 1) * bsp + n] = lane_sum(a1);
      s[(r0 + 2) * bsp + n] = lane_sum(a2);
      s[(r0 + 3) * bsp + n] = lane_sum(a3);
    }
  }
}

// acc[r][:] += sum_n P[r][n] * V[n][:] for 4 rows and 16 head-dim lanes at a time, over the
// nvalid keys of the block (V rows v_stride floats apart).
inline void accumulate(const float* p, const float* v, int64_t v_stride, float* acc,
                       int64_t rows_pad, int64_t dp, int64_t bsp, int64_t nvalid) {
  for (int64_t r0 = 0; r0 < rows_pad; r0 += kRows) {
    const float* p0 = p + (r0 + 0) * bsp;
    const float* p1 = p + (r0 + 1) * bsp;
    const float* p2 = p + (r0 + 2) * bsp;
    const float* p3 = p + (r0 + 3) * bsp;
    for (int64_t d0 = 0; d0 < dp; d0 += kLanes) {
      float* a = acc + r0 * dp + d0;
      v16 c0 = load16(a), c1 = load16(a + dp), c2 = load16(a + 2 * dp), c3 = load16(a + 3 * dp);
      for (int64_t n = 0; n < nvalid; ++n) {
        const v16 vv = load16(v + n * v_stride + d0);
        c0 += p0[n] * vv;
        c1 += p1[n] * vv;
        c2 += p2[n] * vv;
        c3 += p3[n] * vv;
      }
      store16(a, c0);
      store16(a + dp, c1);
      store16(a + 2 * dp, c2);
      store16(a + 3 * dp, c3);
    }
  }
}

// Per-thread tiles, allocated once per call at the size of its largest work item and zeroed
// then. A work item writes what it reads before reading it, with three exceptions: the head-dim
// padding of q and v (columns d..dp) is never written, so it stays zero; the K tile serves both
// layouts, so each layout zeroes its own padding when it copies keys in (run_work: another
// request's keys left there would meet the zero query padding, and 0 x inf is NaN); and
// start() resets the running totals and the padding query rows. (Re-zeroing the whole K / V
// tiles for every work item cost more than a decode item's work: 2 x bsp x dp floats against a
// few dozen keys.)
struct Buffers {
  std::vector<float> q, kt, v, s, acc, m, l;
  std::vector<int64_t> limit;  // keys visible to each row
  Buffers(int64_t max_rows_pad, int64_t dp, int64_t bsp)
      : q(max_rows_pad * dp, 0.f), kt(dp * bsp, 0.f), v(bsp * dp, 0.f),
        s(max_rows_pad * bsp, 0.f), acc(max_rows_pad * dp, 0.f), m(max_rows_pad, 0.f),
        l(max_rows_pad, 0.f), limit(max_rows_pad, 0) {}
  // A work item of rows_pad rows: running totals and the padding query rows (rows..rows_pad,
  // which a larger earlier item may have filled) back to zero.
  void start(int64_t rows, int64_t rows_pad, int64_t dp) {
    std::fill(q.begin() + rows * dp, q.begin() + rows_pad * dp, 0.f);
    std::fill(acc.begin(), acc.begin() + rows_pad * dp, 0.f);
    std::fill(l.begin(), l.begin() + rows_pad, 0.f);
    std::fill(limit.begin(), limit.begin() + rows_pad, 0);
  }
};

template <typename T>
void run_work(const Work& w, const Shape& sh, const T* query, const T* kc, const T* vc,
              const int32_t* bt, const int32_t* qsl, const int32_t* lens, T* out, Buffers& buf) {
  const int64_t q_len = qsl[w.b + 1] - qsl[w.b];
  const int64_t kv_len = lens[w.b];
  const int64_t rows = (w.q1 - w.q0) * sh.group;
  const int64_t rows_pad = round_up(rows, kRows);
  const int64_t dp = sh.dp, bsp = sh.bsp, d = sh.d;
  buf.start(rows, rows_pad, dp);
  int64_t* limit = buf.limit.data();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = w.q0 + r / sh.group;
    const int64_t h = w.kh * sh.group + r % sh.group;
    const T* src = query + ((qsl[w.b] + i) * sh.hq + h) * d;
    for (int64_t x = 0; x < d; ++x) buf.q[r * dp + x] = to_float(src[x]) * sh.scale;
    limit[r] = sh.causal ? kv_len - q_len + i + 1 : kv_len;
    buf.m[r] = -std::numeric_limits<float>::infinity();
  }
  const int64_t n_keys = *std::max_element(limit, limit + rows_pad);
  const int32_t* row_bt = bt + w.b * sh.bt_stride;
  for (int64_t base = 0; base < n_keys; base += sh.bs) {
    const int64_t blk = row_bt[base / sh.bs];
    const int64_t nvalid = std::min(sh.bs, n_keys - base);
    const int64_t ncols = round_up(nvalid, kLanes);
    const T* kb = kc + blk * sh.kcs[0] + w.kh * sh.kcs[2];
    const T* vb = vc + blk * sh.vcs[0] + w.kh * sh.vcs[2];
    const bool rowmajor = rows_pad <= 2 * kRows;
    // A float32 cache with contiguous head_dim (and no lane padding) is read in place: the
    // row-major K tile and the V tile are the cache's own rows, nothing is copied.
    const float* k_rows = buf.kt.data();  // the K tile buffer used row-major
    int64_t k_stride = dp;
    const float* v_rows = buf.v.data();
    int64_t v_stride = dp;
    if constexpr (std::is_same_v<T, float>) {
      if (sh.in_place) {
        k_rows = kb;
        k_stride = sh.kcs[1];
        v_rows = vb;
        v_stride = sh.vcs[1];
      }
    }
    const bool copy_k = !rowmajor || k_rows == buf.kt.data();
    const bool copy_v = v_rows == buf.v.data();
    for (int64_t n = 0; n < nvalid; ++n) {
      const T* kr = kb + n * sh.kcs[1];
      const T* vr = vb + n * sh.vcs[1];
      if (!rowmajor) {
        for (int64_t x = 0; x < d; ++x) buf.kt[x * bsp + n] = to_float(kr[x * sh.kcs[3]]);
      } else if (copy_k) {
        float* kd = buf.kt.data() + n * dp;
        if (sh.kcs[3] == 1) {
          for (int64_t x = 0; x < d; ++x) kd[x] = to_float(kr[x]);
        } else {
          for (int64_t x = 0; x < d; ++x) kd[x] = to_float(kr[x * sh.kcs[3]]);
        }
        // head-dim padding: a transposed item on this thread may have left another request's
        // keys here, and 0 x inf is NaN
        std::fill(kd + d, kd + dp, 0.f);
      }
      if (copy_v) {
        float* vd = buf.v.data() + n * dp;
        if (sh.vcs[3] == 1) {
          for (int64_t x = 0; x < d; ++x) vd[x] = to_float(vr[x]);
        } else {
          for (int64_t x = 0; x < d; ++x) vd[x] = to_float(vr[x * sh.vcs[3]]);
        }
      }
    }
    if (!rowmajor) {
      for (int64_t n = nvalid; n < ncols; ++n)
        for (int64_t x = 0; x < d; ++x) buf.kt[x * bsp + n] = 0.f;
      // head-dim padding rows: a row-major item on this thread may have used the tile
      for (int64_t x = d; x < dp; ++x) std::fill_n(buf.kt.data() + x * bsp, ncols, 0.f);
    }
    if (rowmajor)
      scores_rowmajor(buf.q.data(), k_rows, k_stride, buf.s.data(), rows_pad, dp, bsp, nvalid);
    else
      scores(buf.q.data(), buf.kt.data(), buf.s.data(), rows_pad, dp, bsp, ncols);
    for (int64_t r = 0; r < rows_pad; ++r) {
      float* s = buf.s.data() + r * bsp;
      const int64_t nv = r < rows ? std::max<int64_t>(0, std::min(nvalid, limit[r] - base)) : 0;
      if (nv == 0) {
        for (int64_t n = 0; n < ncols; ++n) s[n] = 0.f;
        continue;
      }
      float mx = buf.m[r];
      for (int64_t n = 0; n < nv; ++n) mx = std::max(mx, s[n]);
      const float corr = std::isinf(buf.m[r]) ? 0.f : fast_exp(buf.m[r] - mx);
      float sum = 0.f;
#pragma omp simd reduction(+ : sum)
      for (int64_t n = 0; n < nv; ++n) {
        s[n] = fast_exp(s[n] - mx);
        sum += s[n];
      }
      for (int64_t n = nv; n < ncols; ++n) s[n] = 0.f;
      buf.m[r] = mx;
      buf.l[r] = buf.l[r] * corr + sum;
      float* a = buf.acc.data() + r * dp;
#pragma omp simd
      for (int64_t x = 0; x < dp; ++x) a[x] *= corr;
    }
    accumulate(buf.s.data(), v_rows, v_stride, buf.acc.data(), rows_pad, dp, bsp, nvalid);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = w.q0 + r / sh.group;
    const int64_t h = w.kh * sh.group + r % sh.group;
    T* dst = out + ((qsl[w.b] + i) * sh.hq + h) * d;
    const float inv = buf.l[r] > 0.f ? 1.0f / buf.l[r] : 0.f;
    for (int64_t x = 0; x < d; ++x) dst[x] = from_float<T>(buf.acc[r * dp + x] * inv);
  }
}

void validate(const int32_t* bt, const int32_t* qsl, const int32_t* lens, int64_t tokens,
              int64_t batch, int64_t max_blocks, int64_t num_blocks, int64_t block_size) {
  if (batch > 0 && qsl[0] != 0) bad_arg("query_start_loc must start at 0");
  if (qsl[batch] != tokens)
    bad_arg("query_start_loc must end at the token count " + std::to_string(tokens) + ", got " +
            std::to_string(qsl[batch]));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t q_len = int64_t(qsl[b + 1]) - qsl[b];
    if (q_len < 0) bad_arg("query_start_loc must be non-decreasing");
    if (lens[b] < q_len)
      bad_arg("seq_lens[" + std::to_string(b) + "]=" + std::to_string(lens[b]) +
              " must be >= its query length " + std::to_string(q_len));
    const int64_t need = (int64_t(lens[b]) + block_size - 1) / block_size;
    if (need > max_blocks)
      bad_arg("seq_lens[" + std::to_string(b) + "] needs " + std::to_string(need) +
              " blocks but block_table has " + std::to_string(max_blocks) + " columns");
    for (int64_t j = 0; j < need; ++j) {
      const int64_t id = bt[b * max_blocks + j];
      if (id < 0 || id >= num_blocks)
        bad_arg("block_table[" + std::to_string(b) + "][" + std::to_string(j) + "]=" +
                std::to_string(id) + " is outside [0, " + std::to_string(num_blocks) +
                ") (key_cache num_blocks)");
    }
  }
}

}  // namespace

void paged_attention(uintptr_t query, uintptr_t key_cache, uintptr_t value_cache,
                     uintptr_t block_table, uintptr_t query_start_loc, uintptr_t seq_lens,
                     uintptr_t out, int64_t tokens, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t batch, int64_t max_blocks, int64_t num_blocks,
                     int64_t block_size, const std::vector<int64_t>& kcs,
                     const std::vector<int64_t>& vcs, double scale, bool causal, int dtype) {
  if (kcs.size() != 4 || vcs.size() != 4) bad_arg("key_cache/value_cache: expected 4 strides");
  if (num_kv_heads <= 0 || num_heads % num_kv_heads)
    bad_arg("query heads must be a multiple of key_cache heads");
  const int32_t* bt = ptr<const int32_t>(block_table);
  const int32_t* qsl = ptr<const int32_t>(query_start_loc);
  const int32_t* lens = ptr<const int32_t>(seq_lens);
  validate(bt, qsl, lens, tokens, batch, max_blocks, num_blocks, block_size);
  Shape sh{num_heads, num_kv_heads, head_dim, round_up(head_dim, kLanes),
           num_heads / num_kv_heads, block_size, round_up(block_size, kLanes), max_blocks,
           kcs.data(), vcs.data(), float(scale), causal,
           kcs[3] == 1 && vcs[3] == 1 && round_up(head_dim, kLanes) == head_dim};
  std::vector<Work> work;
  int64_t cost = 0;  // multiply-adds of the score tiles, roughly half the call's arithmetic
  int64_t max_rows_pad = kRows;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t q_len = qsl[b + 1] - qsl[b];
    for (int64_t q0 = 0; q0 < q_len; q0 += kQTile) {
      const int64_t q1 = std::min(q_len, q0 + kQTile);
      const int64_t rows_pad = round_up((q1 - q0) * sh.group, kRows);
      max_rows_pad = std::max(max_rows_pad, rows_pad);
      cost += num_kv_heads * rows_pad * sh.dp * lens[b];
      for (int64_t kh = 0; kh < num_kv_heads; ++kh) work.push_back({b, kh, q0, q1});
    }
  }
  // Fork only when the work outweighs waking the second thread: with OMP_WAIT_POLICY=PASSIVE
  // that took ~50 us on a 2-core AVX-512 EPYC, where one thread ran 2^20 of these units in
  // ~150-200 us (16 decode rows at 128 keys, 9 query / 3 KV heads of 64); below it, one thread
  // was faster (16 rows at 16 keys: 31 us against 58 us on two).
  const bool par = work.size() > 1 && cost >= (int64_t(1) << 20);
  dispatch(dtype, "query", [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = int64_t(work.size());
#pragma omp parallel if (par)
    {
      Buffers buf(max_rows_pad, sh.dp, sh.bsp);
#pragma omp for schedule(dynamic, 1)
      for (int64_t i = 0; i < n; ++i)
        run_work<T>(work[i], sh, ptr<const T>(query), ptr<const T>(key_cache),
                    ptr<const T>(value_cache), bt, qsl, lens, ptr<T>(out), buf);
    }
  });
}

}  // namespace ascend_ops
