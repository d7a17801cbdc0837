// The kernels of shared_attention.h. Scalar, SSE2 and AVX2: shared_simd.h's kernels of that path
// applied row by row to a converted tile. AVX-512: register-blocked kernels (GCC vector
// extensions, 8 doubles = one zmm) that read fp16/bf16 rows in place, templated on the row type
// and on how many heads / column vectors stay in registers.
#include "reference/math/shared_attention.h"
#include "core/vector_memory.h"
#include "reference/math/shared_v8.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

// The vector helpers below are always inlined, so their vector arguments never cross a call.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace opgate::math {
namespace {

// ---- scalar, SSE2 and AVX2: shared_simd.h's kernels row by row ----------------------------------
// The rows converted to a double tile (shared_simd's exact halves_to_double), then dot8_abs,
// scaled_add and deviation_add of that path per row and head: by definition the same bits. (GCC
// lowers 8-double vectors held across a loop poorly where they are not one register, so the
// register-blocked kernels below are compiled for AVX-512 only.)

const double* tile_of(const Kernels& k, const void* rows, RowType type, int64_t elements, std::vector<double>& buf) {
  if (type == RowType::kF64) return static_cast<const double*>(rows);
  buf.resize(static_cast<size_t>(elements));
  k.halves_to_double(static_cast<const uint16_t*>(rows), elements, type == RowType::kBF16, buf.data());
  return buf.data();
}

template <Isa kIsa>
void scores_tiled(const double* q, int64_t heads, const void* rows, RowType type, int64_t count, int64_t n,
                  double* dot, double* mag) {
  const Kernels& k = kernels(kIsa);
  thread_local std::vector<double> buf;  // one tile per thread, reused
  const double* x = tile_of(k, rows, type, count * n, buf);
  for (int64_t r = 0; r < count; ++r) k.dot8_abs(q, heads, x + r * n, n, dot + r * heads, mag + r * heads);
}

template <Isa kIsa>
void weighted_rows_tiled(double* acc, int64_t heads, const double* p, const void* rows, RowType type, int64_t count,
                         int64_t n, char* nonfinite) {
  const Kernels& k = kernels(kIsa);
  thread_local std::vector<double> buf;  // one tile per thread, reused
  const double* x = tile_of(k, rows, type, count * n, buf);
  for (int64_t r = 0; r < count; ++r) {
    const double* xr = x + r * n;
    if (nonfinite != nullptr) {
      for (int64_t i = 0; i < n; ++i) {
        if (!std::isfinite(xr[i])) nonfinite[r] = 1;
      }
    }
    for (int64_t h = 0; h < heads; ++h) k.scaled_add(acc + h * n, p[r * heads + h], xr, n);
  }
}

// Rows left out of tail_rows add f * m = +0 to the tail here, which leaves it unchanged.
template <Isa kIsa>
void deviation_rows_tiled(double* dev, double* wsum, double* tail, const double* c, int64_t heads, const double* wd,
                          const double* w, const double* f, const char* /*tail_rows*/, const void* rows, RowType type,
                          const double* abs_x, int64_t count, int64_t n) {
  const Kernels& k = kernels(kIsa);
  thread_local std::vector<double> buf;  // one tile per thread, reused
  const double* x = tile_of(k, rows, type, count * n, buf);
  for (int64_t r = 0; r < count; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t j = r * heads + h;
      k.deviation_add(dev + h * n, wsum + h * n, tail + h * n, x + r * n, c + h * n,
                      abs_x != nullptr ? abs_x + r * n : nullptr, wd[j], w[j], f[j], n);
    }
  }
}

template <Isa kIsa>
constexpr AttentionKernels tiled_kernels() {
  return {scores_tiled<kIsa>, weighted_rows_tiled<kIsa>, deviation_rows_tiled<kIsa>};
}

const AttentionKernels kAttention_scalar = tiled_kernels<Isa::kScalar>();
const AttentionKernels kAttention_sse2 = tiled_kernels<Isa::kSse2>();
const AttentionKernels kAttention_avx2 = tiled_kernels<Isa::kAvx2>();

// ---- vector formulation -------------------------------------------------------------------------

// V8, load8, store8 and abs8: reference/math/shared_v8.h.
OPGATE_INLINE V8 zero8() { return V8{0, 0, 0, 0, 0, 0, 0, 0}; }
// a in every lane by a shuffle (no arithmetic, so NaN payloads pass unchanged): one broadcast.
OPGATE_INLINE V8 bcast8(double a) {
  const V8 v = {a};
  return __builtin_shufflevector(v, v, 0, 0, 0, 0, 0, 0, 0, 0);
}

// How 8 fp16/bf16 values become doubles: F16C + AVX-512 widening, with a per-block Inf/NaN test, or
// without it (kAvx512Clean) for calls whose rows were found all finite.
enum class Conv { kAvx512, kAvx512Clean };
constexpr Conv clean_of(Conv) { return Conv::kAvx512Clean; }

// Whether count fp16/bf16 patterns are all finite (one pass, vectorised by the compiler).
OPGATE_INLINE bool all_finite(const void* rows, int64_t count, bool bf16) {
  const auto* h = static_cast<const uint16_t*>(rows);
  const uint16_t inf = bf16 ? 0x7F80 : 0x7C00;
  uint16_t bad = 0;
  for (int64_t i = 0; i < count; ++i) bad |= static_cast<uint16_t>((h[i] & 0x7FFF) >= inf);
  return bad == 0;
}

// Exact in every case: fp16 -> fp32 by F16C, bf16 -> fp32 by a 16-bit shift, fp32 -> fp64. Inf and
// NaN blocks take the table (NaN payloads as the scalar path's) and set `bad`. Not always_inline:
// the generic templates calling it have no target; the path functions are `flatten`, which inlines
// it there, where the target matches.
__attribute__((target("avx512f,avx2,f16c"))) inline void f16c8_512(const uint16_t* src, bool bf16, const double* tab,
                                                                   bool& bad, double* out) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  const __m128i limit = _mm_set1_epi16(static_cast<int16_t>(bf16 ? 0x7F7F : 0x7BFF));
  if (__builtin_expect(_mm_movemask_epi8(_mm_cmpgt_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7FFF)), limit)) != 0, 0)) {
    bad = true;
    for (int k = 0; k < 8; ++k) out[k] = tab[src[k]];
    return;
  }
  const __m256 f = bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
  _mm512_storeu_pd(out, _mm512_maskz_cvtps_pd(0xFF, f));
}

// The same without the Inf/NaN test (finite rows: F16C and the shift are exact there).
__attribute__((target("avx512f,avx2,f16c"))) inline void f16c8_512_raw(const uint16_t* src, bool bf16, double* out) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  const __m256 f = bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
  _mm512_storeu_pd(out, _mm512_maskz_cvtps_pd(0xFF, f));
}

// 8 consecutive elements of the rows, from element index idx, as doubles.
// tab: the exact values of the row type's bit patterns (looked up once per call, so the loops
// make no calls and keep their accumulators in registers).
template <Conv kConv, RowType kType>
OPGATE_INLINE V8 load_x(const void* rows, int64_t idx, const double* tab, bool& bad) {
  if constexpr (kType == RowType::kF64) {
    return load8(static_cast<const double*>(rows) + idx);
  } else {
    constexpr bool kBf16 = kType == RowType::kBF16;
    const uint16_t* src = static_cast<const uint16_t*>(rows) + idx;
    double out[8];
    if constexpr (kConv == Conv::kAvx512) {
      f16c8_512(src, kBf16, tab, bad, out);
    } else {
      f16c8_512_raw(src, kBf16, out);
    }
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
    return __builtin_shufflevector(x, y, 0, 8, 2, 10, 4, 12, 6, 14) +
           __builtin_shufflevector(x, y, 1, 9, 3, 11, 5, 13, 7, 15);
  };
  // [x01+x23, y01+y23, z01+z23, w01+w23, x45+x67, y45+y67, z45+z67, w45+w67]
  auto quads = [](V8 xy, V8 zw) {
    return __builtin_shufflevector(xy, zw, 0, 1, 8, 9, 4, 5, 12, 13) +
           __builtin_shufflevector(xy, zw, 2, 3, 10, 11, 6, 7, 14, 15);
  };
  const V8 abcd = quads(pairs(a, b), pairs(c, d));
  const V8 efgh = quads(pairs(e, f), pairs(g, h));
  return __builtin_shufflevector(abcd, efgh, 0, 1, 2, 3, 8, 9, 10, 11) +
         __builtin_shufflevector(abcd, efgh, 4, 5, 6, 7, 12, 13, 14, 15);
}

// Up to 4 heads per block (kHeads in registers); a short last block repeats its last head and
// drops the copies' results.
template <Conv kConv, RowType kType, int kHeads>
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
        const V8 x = load_x<kConv, kType>(rows, base + i, tab, bad);
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
template <Conv kConv, RowType kType, int kHeads, int kVecs>
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
    for (int v = 0; v < kVecs; ++v) x[v] = load_x<kConv, kType>(rows, r * n + c0 + 8 * v, tab, bad);
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

template <Conv kConv, RowType kType, int kHeads, int kVecs>
OPGATE_INLINE void weighted_heads(double* acc, int64_t heads, int64_t h0, const double* p, const void* rows,
                                  int64_t count, int64_t n, char* nonfinite) {
  const double* tab = table_of<kType>();
  const int64_t body = n - n % 8;
  int64_t c0 = 0;
  for (; c0 + 8 * kVecs <= body; c0 += 8 * kVecs) {
    weighted_block<kConv, kType, kHeads, kVecs>(acc, heads, h0, c0, p, rows, count, n, nonfinite);
  }
  for (; c0 < body; c0 += 8) weighted_block<kConv, kType, kHeads, 1>(acc, heads, h0, c0, p, rows, count, n, nonfinite);
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

template <Conv kConv, RowType kType, int kHeads, int kVecs>
OPGATE_INLINE void weighted_vec(double* acc, int64_t heads, const double* p, const void* rows, int64_t count,
                                int64_t n, char* nonfinite) {
  int64_t h0 = 0;
  for (; h0 + kHeads <= heads; h0 += kHeads) {
    weighted_heads<kConv, kType, kHeads, kVecs>(acc, heads, h0, p, rows, count, n, nonfinite);
  }
  for (; h0 < heads; ++h0) weighted_heads<kConv, kType, 1, kVecs>(acc, heads, h0, p, rows, count, n, nonfinite);
}

// kHeads heads from h0, columns [c0, c0 + 8): dev, wsum and tail in registers over all rows.
template <Conv kConv, RowType kType, int kHeads>
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
    const V8 x = load_x<kConv, kType>(rows, r * n + c0, tab, bad);
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

template <Conv kConv, RowType kType, int kHeads>
OPGATE_INLINE void deviation_heads(double* dev, double* wsum, double* tail, const double* c, int64_t heads, int64_t h0,
                                   const double* wd, const double* w, const double* f, const char* tail_rows,
                                   const void* rows, const double* abs_x, int64_t count, int64_t n) {
  const double* tab = table_of<kType>();
  const int64_t body = n - n % 8;
  for (int64_t c0 = 0; c0 < body; c0 += 8) {
    deviation_block<kConv, kType, kHeads>(dev, wsum, tail, c, heads, h0, c0, wd, w, f, tail_rows, rows, abs_x, count,
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

template <Conv kConv, RowType kType, int kHeads>
OPGATE_INLINE void deviation_vec(double* dev, double* wsum, double* tail, const double* c, int64_t heads,
                                 const double* wd, const double* w, const double* f, const char* tail_rows,
                                 const void* rows, const double* abs_x, int64_t count, int64_t n) {
  int64_t h0 = 0;
  for (; h0 + kHeads <= heads; h0 += kHeads) {
    deviation_heads<kConv, kType, kHeads>(dev, wsum, tail, c, heads, h0, wd, w, f, tail_rows, rows, abs_x, count, n);
  }
  for (; h0 < heads; ++h0) {
    deviation_heads<kConv, kType, 1>(dev, wsum, tail, c, heads, h0, wd, w, f, tail_rows, rows, abs_x, count, n);
  }
}

// One function per path and kernel, dispatching on the row type and, for fp16/bf16 rows, on
// whether the call's rows are all finite (then no per-block test). Heads and column vectors kept
// in registers per path (accumulators in about half the register file: 16 xmm, 16 ymm, 32 zmm).
#define OPGATE_ATTENTION_HALVES(call, conv, rows, count, bf16, type, ...) \
  do {                                                                   \
    if (all_finite(rows, count, bf16)) {                                 \
      call<clean_of(conv), type>(__VA_ARGS__);                           \
    } else {                                                             \
      call<conv, type>(__VA_ARGS__);                                     \
    }                                                                    \
  } while (false)
#define OPGATE_ATTENTION_PATH(suffix, attr, conv, score_heads, pv_heads, pv_vecs, dev_heads)                          \
  template <Conv kConv, RowType kType>                                                                               \
  OPGATE_INLINE void scores_t_##suffix(const double* q, int64_t heads, const void* rows, int64_t count, int64_t n,    \
                                       double* dot, double* mag) {                                                   \
    scores_vec<kConv, kType, score_heads>(q, heads, rows, count, n, dot, mag);                                       \
  }                                                                                                                  \
  template <Conv kConv, RowType kType>                                                                               \
  OPGATE_INLINE void weighted_t_##suffix(double* acc, int64_t heads, const double* p, const void* rows, int64_t count, \
                                         int64_t n, char* nonfinite) {                                               \
    weighted_vec<kConv, kType, pv_heads, pv_vecs>(acc, heads, p, rows, count, n, nonfinite);                         \
  }                                                                                                                  \
  template <Conv kConv, RowType kType>                                                                               \
  OPGATE_INLINE void deviation_t_##suffix(double* dev, double* wsum, double* tail, const double* c, int64_t heads,    \
                                          const double* wd, const double* w, const double* f, const char* tail_rows, \
                                          const void* rows, const double* abs_x, int64_t count, int64_t n) {         \
    deviation_vec<kConv, kType, dev_heads>(dev, wsum, tail, c, heads, wd, w, f, tail_rows, rows, abs_x, count, n);   \
  }                                                                                                                  \
  attr void scores_##suffix(const double* q, int64_t heads, const void* rows, RowType type, int64_t count, int64_t n, \
                            double* dot, double* mag) {                                                              \
    switch (type) {                                                                                                  \
      case RowType::kF64: return scores_t_##suffix<conv, RowType::kF64>(q, heads, rows, count, n, dot, mag);         \
      case RowType::kF16:                                                                                            \
        OPGATE_ATTENTION_HALVES(scores_t_##suffix, conv, rows, count * n, false, RowType::kF16,                      \
                                q, heads, rows, count, n, dot, mag);                                                 \
        return;                                                                                                      \
      case RowType::kBF16:                                                                                           \
        OPGATE_ATTENTION_HALVES(scores_t_##suffix, conv, rows, count * n, true, RowType::kBF16,                      \
                                q, heads, rows, count, n, dot, mag);                                                 \
        return;                                                                                                      \
    }                                                                                                                \
  }                                                                                                                  \
  attr void weighted_rows_##suffix(double* acc, int64_t heads, const double* p, const void* rows, RowType type,      \
                                   int64_t count, int64_t n, char* nonfinite) {                                      \
    switch (type) {                                                                                                  \
      case RowType::kF64: return weighted_t_##suffix<conv, RowType::kF64>(acc, heads, p, rows, count, n, nullptr);   \
      case RowType::kF16:                                                                                            \
        OPGATE_ATTENTION_HALVES(weighted_t_##suffix, conv, rows, count * n, false, RowType::kF16,                    \
                                acc, heads, p, rows, count, n, nonfinite);                                           \
        return;                                                                                                      \
      case RowType::kBF16:                                                                                           \
        OPGATE_ATTENTION_HALVES(weighted_t_##suffix, conv, rows, count * n, true, RowType::kBF16,                    \
                                acc, heads, p, rows, count, n, nonfinite);                                           \
        return;                                                                                                      \
    }                                                                                                                \
  }                                                                                                                  \
  attr void deviation_rows_##suffix(double* dev, double* wsum, double* tail, const double* c, int64_t heads,         \
                                    const double* wd, const double* w, const double* f, const char* tail_rows,       \
                                    const void* rows, RowType type, const double* abs_x, int64_t count, int64_t n) { \
    switch (type) {                                                                                                  \
      case RowType::kF64:                                                                                            \
        return deviation_t_##suffix<conv, RowType::kF64>(dev, wsum, tail, c, heads, wd, w, f, tail_rows, rows,       \
                                                          abs_x, count, n);                                          \
      case RowType::kF16:                                                                                            \
        OPGATE_ATTENTION_HALVES(deviation_t_##suffix, conv, rows, count * n, false, RowType::kF16,                   \
                                dev, wsum, tail, c, heads, wd, w, f, tail_rows, rows, abs_x, count, n);              \
        return;                                                                                                      \
      case RowType::kBF16:                                                                                           \
        OPGATE_ATTENTION_HALVES(deviation_t_##suffix, conv, rows, count * n, true, RowType::kBF16,                   \
                                dev, wsum, tail, c, heads, wd, w, f, tail_rows, rows, abs_x, count, n);              \
        return;                                                                                                      \
    }                                                                                                                \
  }                                                                                                                  \
  const AttentionKernels kAttention_##suffix = {scores_##suffix, weighted_rows_##suffix, deviation_rows_##suffix};

OPGATE_ATTENTION_PATH(avx512, __attribute__((target("avx512f,avx2,f16c"), flatten)), Conv::kAvx512, 4, 4, 2, 4)

}  // namespace

const AttentionKernels& attention_kernels(Isa isa) {
  if (!isa_supported(isa)) {
    isa = isa_supported(Isa::kAvx512) ? Isa::kAvx512 : (isa_supported(Isa::kAvx2) ? Isa::kAvx2 : Isa::kSse2);
  }
  switch (isa) {
    case Isa::kNeon:  // not this architecture's (isa_supported above)
    case Isa::kScalar: return kAttention_scalar;
    case Isa::kSse2: return kAttention_sse2;
    case Isa::kAvx2: return kAttention_avx2;
    case Isa::kAvx512: return kAttention_avx512;
  }
  return kAttention_scalar;
}

}  // namespace opgate::math
