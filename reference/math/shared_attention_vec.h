// The register-blocked formulation of shared_attention.h's kernels (GCC vector extensions, 8
// doubles), included only by ISA files (reference/math/<arch>/shared_attention_<isa>.cpp), each of
// which compiles it into its own path with OPGATE_ATTENTION_PATH. It reads fp16/bf16 rows in place
// through the path's converter and keeps heads and column vectors in registers; each lane is one
// output element's own sum in the order of shared_simd.h's dot8_abs / scaled_add / deviation_add
// (the 8 lanes of a dot product are its 8 interleaved partial sums), so the bits are the tiled
// kernels'. Suited to ISAs where 8 doubles are one register (AVX-512): GCC lowers 8-double vectors
// held across a loop poorly where they are several. Everything has internal linkage and is
// always inlined into the path's functions.
//
// A converter (the Conv parameter) is a type with
//   static void halves8(const uint16_t* src, bool bf16, const double* tab, bool& bad, double* out);
// writing the exact doubles of the 8 patterns at src (Inf/NaN blocks from tab, setting bad), and a
// type Conv::Clean doing the same for rows known to be all finite (no Inf/NaN test).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/vector_memory.h"
#include "reference/math/shared_attention.h"
#include "reference/math/shared_v8.h"

// The vector helpers below are always inlined, so their vector arguments never cross a call.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace opgate::math {
namespace {

// V8, load8, store8 and abs8: reference/math/shared_v8.h.
OPGATE_INLINE V8 zero8() { return V8{0, 0, 0, 0, 0, 0, 0, 0}; }
// a in every lane by a shuffle (no arithmetic, so NaN payloads pass unchanged): one broadcast.
OPGATE_INLINE V8 bcast8(double a) {
  const V8 v = {a};
  return OPGATE_SHUFFLE8(v, v, 0, 0, 0, 0, 0, 0, 0, 0);
}

// Whether count fp16/bf16 patterns are all finite (one pass, vectorised by the compiler).
OPGATE_INLINE bool all_finite(const void* rows, int64_t count, bool bf16) {
  const auto* h = static_cast<const uint16_t*>(rows);
  const uint16_t inf = bf16 ? 0x7F80 : 0x7C00;
  uint16_t bad = 0;
  for (int64_t i = 0; i < count; ++i) bad |= static_cast<uint16_t>((h[i] & 0x7FFF) >= inf);
  return bad == 0;
}

// 8 consecutive elements of the rows, from element index idx, as doubles (halves by Conv).
// tab: the exact values of the row type's bit patterns (looked up once per call, so the loops
// make no calls and keep their accumulators in registers).
template <class Conv, RowType kType>
OPGATE_INLINE V8 load_x(const void* rows, int64_t idx, const double* tab, bool& bad) {
  if constexpr (kType == RowType::kF64) {
    return load8(static_cast<const double*>(rows) + idx);
  } else {
    constexpr bool kBf16 = kType == RowType::kBF16;
    double out[8];
    Conv::halves8(static_cast<const uint16_t*>(rows) + idx, kBf16, tab, bad, out);
    return load8(out);
  }
}

template <RowType kType>
OPGATE_INLINE double value_at(const void* rows, int64_t idx, const double* tab) {
  if constexpr (kType == RowType::kF64) return static_cast<const double*>(rows)[idx];
  return tab[static_cast<const uint16_t*>(rows)[idx]];
}

template <RowType kType>
const double* table_of() {
  return kType == RowType::kF64 ? nullptr : exact_half_values(kType == RowType::kBF16);
}

// Lane j of the result is the tree ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7)) of input j's
// lanes (inputs a..h): three stages of pairwise sums, each pairing the same lanes as the tree.
OPGATE_INLINE V8 tree8(V8 a, V8 b, V8 c, V8 d, V8 e, V8 f, V8 g, V8 h) {
  // [x0+x1, y0+y1, x2+x3, y2+y3, x4+x5, y4+y5, x6+x7, y6+y7]
  auto pairs = [](V8 x, V8 y) {
    return OPGATE_SHUFFLE8(x, y, 0, 8, 2, 10, 4, 12, 6, 14) +
           OPGATE_SHUFFLE8(x, y, 1, 9, 3, 11, 5, 13, 7, 15);
  };
  // [x01+x23, y01+y23, z01+z23, w01+w23, x45+x67, y45+y67, z45+z67, w45+w67]
  auto quads = [](V8 xy, V8 zw) {
    return OPGATE_SHUFFLE8(xy, zw, 0, 1, 8, 9, 4, 5, 12, 13) +
           OPGATE_SHUFFLE8(xy, zw, 2, 3, 10, 11, 6, 7, 14, 15);
  };
  const V8 abcd = quads(pairs(a, b), pairs(c, d));
  const V8 efgh = quads(pairs(e, f), pairs(g, h));
  return OPGATE_SHUFFLE8(abcd, efgh, 0, 1, 2, 3, 8, 9, 10, 11) +
         OPGATE_SHUFFLE8(abcd, efgh, 4, 5, 6, 7, 12, 13, 14, 15);
}

// Up to 4 heads per block (kHeads in registers); a short last block repeats its last head and
// drops the copies' results.
template <class Conv, RowType kType, int kHeads>
OPGATE_INLINE void scores_vec(const double* q, int64_t heads, const void* rows, int64_t count, int64_t n, double* dot,
                              double* mag) {
  const double* tab = table_of<kType>();
  static_assert(kHeads >= 1 && kHeads <= 4);
  const int64_t body = n - n % 8;
  for (int64_t r = 0; r < count; ++r) {
    const int64_t base = r * n;
    for (int64_t h0 = 0; h0 < heads; h0 += kHeads) {
      const double* qh[kHeads];
      V8 l[4], a[4];
      for (int k = 0; k < 4; ++k) {
        l[k] = zero8();
        a[k] = zero8();
      }
      for (int k = 0; k < kHeads; ++k) qh[k] = q + std::min<int64_t>(h0 + k, heads - 1) * n;
      for (int64_t i = 0; i < body; i += 8) {
        bool bad = false;
        const V8 x = load_x<Conv, kType>(rows, base + i, tab, bad);
        for (int k = 0; k < kHeads; ++k) {
          const V8 v = load8(qh[k] + i) * x;
          l[k] += v;
          a[k] += abs8(v);
        }
      }
      const int64_t live = std::min<int64_t>(kHeads, heads - h0);
      if (body == n) {
        double out[8];
        store8(out, tree8(l[0], l[1], l[2], l[3], a[0], a[1], a[2], a[3]));
        for (int64_t k = 0; k < live; ++k) {
          dot[r * heads + h0 + k] = out[k];
          mag[r * heads + h0 + k] = out[4 + k];
        }
        continue;
      }
      // A tail: element i to lane i % 8 after the body, then the tree (as dot8_abs).
      for (int k = 0; k < kHeads; ++k) {  // constant k: l and a stay in registers
        if (k >= live) break;
        double lane[8], lane_abs[8];
        store8(lane, l[k]);
        store8(lane_abs, a[k]);
        for (int64_t i = body; i < n; ++i) {
          const double v = qh[k][i] * value_at<kType>(rows, base + i, tab);
          lane[i % 8] += v;
          lane_abs[i % 8] += std::fabs(v);
        }
        dot[r * heads + h0 + k] =
            ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
        mag[r * heads + h0 + k] = ((lane_abs[0] + lane_abs[1]) + (lane_abs[2] + lane_abs[3])) +
                                  ((lane_abs[4] + lane_abs[5]) + (lane_abs[6] + lane_abs[7]));
      }
    }
  }
}

// kHeads heads from h0, columns [c0, c0 + 8 * kVecs): accumulators in registers over all rows.
template <class Conv, RowType kType, int kHeads, int kVecs>
OPGATE_INLINE void weighted_block(double* acc, int64_t heads, int64_t h0, int64_t c0, const double* p,
                                  const void* rows, int64_t count, int64_t n, char* nonfinite) {
  const double* tab = table_of<kType>();
  V8 s[kHeads][kVecs];
  for (int k = 0; k < kHeads; ++k) {
    for (int v = 0; v < kVecs; ++v) s[k][v] = load8(acc + (h0 + k) * n + c0 + 8 * v);
  }
  for (int64_t r = 0; r < count; ++r) {
    bool bad = false;
    V8 x[kVecs];
    for (int v = 0; v < kVecs; ++v) x[v] = load_x<Conv, kType>(rows, r * n + c0 + 8 * v, tab, bad);
    if (bad && nonfinite != nullptr) nonfinite[r] = 1;
    for (int k = 0; k < kHeads; ++k) {
      const V8 pk = bcast8(p[r * heads + h0 + k]);
      for (int v = 0; v < kVecs; ++v) s[k][v] = s[k][v] + pk * x[v];
    }
  }
  for (int k = 0; k < kHeads; ++k) {
    for (int v = 0; v < kVecs; ++v) store8(acc + (h0 + k) * n + c0 + 8 * v, s[k][v]);
  }
}

template <class Conv, RowType kType, int kHeads, int kVecs>
OPGATE_INLINE void weighted_heads(double* acc, int64_t heads, int64_t h0, const double* p, const void* rows,
                                  int64_t count, int64_t n, char* nonfinite) {
  const double* tab = table_of<kType>();
  const int64_t body = n - n % 8;
  int64_t c0 = 0;
  for (; c0 + 8 * kVecs <= body; c0 += 8 * kVecs) {
    weighted_block<Conv, kType, kHeads, kVecs>(acc, heads, h0, c0, p, rows, count, n, nonfinite);
  }
  for (; c0 < body; c0 += 8) weighted_block<Conv, kType, kHeads, 1>(acc, heads, h0, c0, p, rows, count, n, nonfinite);
  for (int64_t r = 0; r < count; ++r) {
    for (int64_t i = body; i < n; ++i) {
      const double x = value_at<kType>(rows, r * n + i, tab);
      if (nonfinite != nullptr && !std::isfinite(x)) nonfinite[r] = 1;
      for (int k = 0; k < kHeads; ++k) {
        double& a = acc[(h0 + k) * n + i];
        a = a + p[r * heads + h0 + k] * x;
      }
    }
  }
}

template <class Conv, RowType kType, int kHeads, int kVecs>
OPGATE_INLINE void weighted_vec(double* acc, int64_t heads, const double* p, const void* rows, int64_t count,
                                int64_t n, char* nonfinite) {
  int64_t h0 = 0;
  for (; h0 + kHeads <= heads; h0 += kHeads) {
    weighted_heads<Conv, kType, kHeads, kVecs>(acc, heads, h0, p, rows, count, n, nonfinite);
  }
  for (; h0 < heads; ++h0) weighted_heads<Conv, kType, 1, kVecs>(acc, heads, h0, p, rows, count, n, nonfinite);
}

// kHeads heads from h0, columns [c0, c0 + 8): dev, wsum and tail in registers over all rows.
template <class Conv, RowType kType, int kHeads>
OPGATE_INLINE void deviation_block(double* dev, double* wsum, double* tail, const double* c, int64_t heads, int64_t h0,
                                   int64_t c0, const double* wd, const double* w, const double* f,
                                   const char* tail_rows, const void* rows, const double* abs_x, int64_t count,
                                   int64_t n) {
  const double* tab = table_of<kType>();
  V8 e[kHeads], s[kHeads], t[kHeads], ck[kHeads];
  for (int k = 0; k < kHeads; ++k) {
    const int64_t o = (h0 + k) * n + c0;
    e[k] = load8(dev + o);
    s[k] = load8(wsum + o);
    t[k] = load8(tail + o);
    ck[k] = load8(c + o);
  }
  for (int64_t r = 0; r < count; ++r) {
    bool bad = false;
    const V8 x = load_x<Conv, kType>(rows, r * n + c0, tab, bad);
    const V8 m = abs_x != nullptr ? load8(abs_x + r * n + c0) : abs8(x);
    const double* wr = w + r * heads + h0;
    const double* wdr = wd + r * heads + h0;
    for (int k = 0; k < kHeads; ++k) {
      e[k] += bcast8(wdr[k]) * abs8(x - ck[k]);
      s[k] += bcast8(wr[k]) * m;
    }
    if (tail_rows == nullptr || tail_rows[r] != 0) {
      const double* fr = f + r * heads + h0;
      for (int k = 0; k < kHeads; ++k) t[k] += bcast8(fr[k]) * m;
    }
  }
  for (int k = 0; k < kHeads; ++k) {
    const int64_t o = (h0 + k) * n + c0;
    store8(dev + o, e[k]);
    store8(wsum + o, s[k]);
    store8(tail + o, t[k]);
  }
}

template <class Conv, RowType kType, int kHeads>
OPGATE_INLINE void deviation_heads(double* dev, double* wsum, double* tail, const double* c, int64_t heads, int64_t h0,
                                   const double* wd, const double* w, const double* f, const char* tail_rows,
                                   const void* rows, const double* abs_x, int64_t count, int64_t n) {
  const double* tab = table_of<kType>();
  const int64_t body = n - n % 8;
  for (int64_t c0 = 0; c0 < body; c0 += 8) {
    deviation_block<Conv, kType, kHeads>(dev, wsum, tail, c, heads, h0, c0, wd, w, f, tail_rows, rows, abs_x, count,
                                          n);
  }
  for (int64_t r = 0; r < count; ++r) {
    const bool with_tail = tail_rows == nullptr || tail_rows[r] != 0;
    for (int64_t i = body; i < n; ++i) {
      const double x = value_at<kType>(rows, r * n + i, tab);
      const double m = abs_x != nullptr ? abs_x[r * n + i] : std::fabs(x);
      for (int k = 0; k < kHeads; ++k) {
        const int64_t o = (h0 + k) * n + i;
        const int64_t j = r * heads + h0 + k;
        dev[o] += wd[j] * std::fabs(x - c[o]);
        wsum[o] += w[j] * m;
        if (with_tail) tail[o] += f[j] * m;
      }
    }
  }
}

template <class Conv, RowType kType, int kHeads>
OPGATE_INLINE void deviation_vec(double* dev, double* wsum, double* tail, const double* c, int64_t heads,
                                 const double* wd, const double* w, const double* f, const char* tail_rows,
                                 const void* rows, const double* abs_x, int64_t count, int64_t n) {
  int64_t h0 = 0;
  for (; h0 + kHeads <= heads; h0 += kHeads) {
    deviation_heads<Conv, kType, kHeads>(dev, wsum, tail, c, heads, h0, wd, w, f, tail_rows, rows, abs_x, count, n);
  }
  for (; h0 < heads; ++h0) {
    deviation_heads<Conv, kType, 1>(dev, wsum, tail, c, heads, h0, wd, w, f, tail_rows, rows, abs_x, count, n);
  }
}

}  // namespace
}  // namespace opgate::math

// One function per path and kernel, dispatching on the row type and, for fp16/bf16 rows, on
// whether the call's rows are all finite (then no per-block test). Heads and column vectors kept
// in registers per path (accumulators in about half the register file). Expanded inside namespace
// opgate::math; `attr` is the path's target attribute (with flatten, so the converter inlines).
#define OPGATE_ATTENTION_HALVES(call, conv, rows, count, bf16, type, ...)                                              \
  do {                                                                                                                 \
    if (all_finite(rows, count, bf16)) {                                                                               \
      call<conv::Clean, type>(__VA_ARGS__);                                                                            \
    } else {                                                                                                           \
      call<conv, type>(__VA_ARGS__);                                                                                   \
    }                                                                                                                  \
  } while (false)
#define OPGATE_ATTENTION_PATH(suffix, attr, conv, score_heads, pv_heads, pv_vecs, dev_heads)                           \
  namespace {                                                                                                          \
  template <class Conv, RowType kType>                                                                                 \
  OPGATE_INLINE void scores_t_##suffix(const double* q, int64_t heads, const void* rows, int64_t count, int64_t n,     \
                                       double* dot, double* mag) {                                                     \
    scores_vec<Conv, kType, score_heads>(q, heads, rows, count, n, dot, mag);                                          \
  }                                                                                                                    \
  template <class Conv, RowType kType>                                                                                 \
  OPGATE_INLINE void weighted_t_##suffix(double* acc, int64_t heads, const double* p, const void* rows, int64_t count, \
                                         int64_t n, char* nonfinite) {                                                 \
    weighted_vec<Conv, kType, pv_heads, pv_vecs>(acc, heads, p, rows, count, n, nonfinite);                            \
  }                                                                                                                    \
  template <class Conv, RowType kType>                                                                                 \
  OPGATE_INLINE void deviation_t_##suffix(double* dev, double* wsum, double* tail, const double* c, int64_t heads,     \
                                          const double* wd, const double* w, const double* f, const char* tail_rows,   \
                                          const void* rows, const double* abs_x, int64_t count, int64_t n) {           \
    deviation_vec<Conv, kType, dev_heads>(dev, wsum, tail, c, heads, wd, w, f, tail_rows, rows, abs_x, count, n);      \
  }                                                                                                                    \
  attr void scores_##suffix(const double* q, int64_t heads, const void* rows, RowType type, int64_t count, int64_t n,  \
                            double* dot, double* mag) {                                                                \
    switch (type) {                                                                                                    \
      case RowType::kF64: return scores_t_##suffix<conv, RowType::kF64>(q, heads, rows, count, n, dot, mag);           \
      case RowType::kF16:                                                                                              \
        OPGATE_ATTENTION_HALVES(scores_t_##suffix, conv, rows, count * n, false, RowType::kF16,                        \
                                q, heads, rows, count, n, dot, mag);                                                   \
        return;                                                                                                        \
      case RowType::kBF16:                                                                                             \
        OPGATE_ATTENTION_HALVES(scores_t_##suffix, conv, rows, count * n, true, RowType::kBF16,                        \
                                q, heads, rows, count, n, dot, mag);                                                   \
        return;                                                                                                        \
    }                                                                                                                  \
  }                                                                                                                    \
  attr void weighted_rows_##suffix(double* acc, int64_t heads, const double* p, const void* rows, RowType type,        \
                                   int64_t count, int64_t n, char* nonfinite) {                                        \
    switch (type) {                                                                                                    \
      case RowType::kF64: return weighted_t_##suffix<conv, RowType::kF64>(acc, heads, p, rows, count, n, nullptr);     \
      case RowType::kF16:                                                                                              \
        OPGATE_ATTENTION_HALVES(weighted_t_##suffix, conv, rows, count * n, false, RowType::kF16,                      \
                                acc, heads, p, rows, count, n, nonfinite);                                             \
        return;                                                                                                        \
      case RowType::kBF16:                                                                                             \
        OPGATE_ATTENTION_HALVES(weighted_t_##suffix, conv, rows, count * n, true, RowType::kBF16,                      \
                                acc, heads, p, rows, count, n, nonfinite);                                             \
        return;                                                                                                        \
    }                                                                                                                  \
  }                                                                                                                    \
  attr void deviation_rows_##suffix(double* dev, double* wsum, double* tail, const double* c, int64_t heads,           \
                                    const double* wd, const double* w, const double* f, const char* tail_rows,         \
                                    const void* rows, RowType type, const double* abs_x, int64_t count, int64_t n) {   \
    switch (type) {                                                                                                    \
      case RowType::kF64:                                                                                              \
        return deviation_t_##suffix<conv, RowType::kF64>(dev, wsum, tail, c, heads, wd, w, f, tail_rows, rows,         \
                                                          abs_x, count, n);                                            \
      case RowType::kF16:                                                                                              \
        OPGATE_ATTENTION_HALVES(deviation_t_##suffix, conv, rows, count * n, false, RowType::kF16,                     \
                                dev, wsum, tail, c, heads, wd, w, f, tail_rows, rows, abs_x, count, n);                \
        return;                                                                                                        \
      case RowType::kBF16:                                                                                             \
        OPGATE_ATTENTION_HALVES(deviation_t_##suffix, conv, rows, count * n, true, RowType::kBF16,                     \
                                dev, wsum, tail, c, heads, wd, w, f, tail_rows, rows, abs_x, count, n);                \
        return;                                                                                                        \
    }                                                                                                                  \
  }                                                                                                                    \
  }                                                                                                                    \
  const AttentionKernels attention_paths::suffix = {scores_##suffix, weighted_rows_##suffix, deviation_rows_##suffix};
