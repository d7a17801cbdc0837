// The vector formulation of shared_simd.h's kernels (GCC vector extensions, 8 doubles), included
// only by the ISA files (reference/math/<arch>/shared_simd_<isa>.cpp), each of which compiles it
// into its own path with OPGATE_SIMD_PATH. Vector operations are element-wise, so a vector of 8
// holds 8 independent sums, in the scalar formulation's order (shared_simd.cpp). Everything here has
// internal linkage and is always inlined, so no path's code is ever shared with another path's.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/vector_memory.h"
#include "reference/math/shared_simd.h"
#include "reference/math/shared_v8.h"

// The vector helpers below are always inlined, so their vector arguments never cross a call.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace opgate::math {
namespace {

// V8, load8, store8 and abs8: reference/math/shared_v8.h.
// A vector-scalar operation broadcasts the scalar (one instruction; an initialiser list of 8 copies
// becomes 8 masked broadcasts). 1 * a == a for every a, -0 and the infinities included.
OPGATE_INLINE V8 splat8(double a) { return V8{1, 1, 1, 1, 1, 1, 1, 1} * a; }

// The 8 lanes of one row after the main loop, then the tail (element i to lane i % 8) and the tree.
OPGATE_INLINE void finish_lanes(V8 lv, V8 av, const double* x, const double* y, int64_t i, int64_t n, double* dot,
                                double* mag) {
  double lane[8], lane_abs[8];
  std::memcpy(lane, &lv, sizeof lane);
  std::memcpy(lane_abs, &av, sizeof lane_abs);
  for (; i < n; ++i) {
    const double v = x[i] * y[i];
    lane[i % 8] += v;
    lane_abs[i % 8] += std::fabs(v);
  }
  *dot = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  *mag = ((lane_abs[0] + lane_abs[1]) + (lane_abs[2] + lane_abs[3])) +
         ((lane_abs[4] + lane_abs[5]) + (lane_abs[6] + lane_abs[7]));
}

// Two rows at a time, so that four independent chains hide the add latency.
OPGATE_INLINE void dot8_abs_vec(const double* x, int64_t heads, const double* y, int64_t n, double* dot, double* mag) {
  const int64_t body = n - n % 8;
  int64_t h = 0;
  for (; h + 2 <= heads; h += 2) {
    const double* x0 = x + h * n;
    const double* x1 = x0 + n;
    V8 l0 = splat8(0), a0 = splat8(0), l1 = splat8(0), a1 = splat8(0);
    for (int64_t i = 0; i < body; i += 8) {
      const V8 yv = load8(y + i);
      const V8 v0 = load8(x0 + i) * yv;
      const V8 v1 = load8(x1 + i) * yv;
      l0 += v0;
      a0 += abs8(v0);
      l1 += v1;
      a1 += abs8(v1);
    }
    finish_lanes(l0, a0, x0, y, body, n, dot + h, mag + h);
    finish_lanes(l1, a1, x1, y, body, n, dot + h + 1, mag + h + 1);
  }
  for (; h < heads; ++h) {
    const double* x0 = x + h * n;
    V8 l0 = splat8(0), a0 = splat8(0);
    for (int64_t i = 0; i < body; i += 8) {
      const V8 v0 = load8(x0 + i) * load8(y + i);
      l0 += v0;
      a0 += abs8(v0);
    }
    finish_lanes(l0, a0, x0, y, body, n, dot + h, mag + h);
  }
}

OPGATE_INLINE void scaled_add_vec(double* acc, double a, const double* x, int64_t n) {
  const V8 av = splat8(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) store8(acc + i, load8(acc + i) + av * load8(x + i));
  for (; i < n; ++i) acc[i] = acc[i] + a * x[i];
}

OPGATE_INLINE void deviation_add_vec(double* dev, double* wsum, double* tail, const double* x, const double* c,
                                     const double* abs_x, double wd, double w, double f, int64_t n) {
  const V8 wdv = splat8(wd), wv = splat8(w), fv = splat8(f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const V8 xv = load8(x + i);
    const V8 m = abs_x != nullptr ? load8(abs_x + i) : abs8(xv);
    store8(dev + i, load8(dev + i) + wdv * abs8(xv - load8(c + i)));
    store8(wsum + i, load8(wsum + i) + wv * m);
    store8(tail + i, load8(tail + i) + fv * m);
  }
  for (; i < n; ++i) {
    const double m = abs_x != nullptr ? abs_x[i] : std::fabs(x[i]);
    dev[i] += wd * std::fabs(x[i] - c[i]);
    wsum[i] += w * m;
    tail[i] += f * m;
  }
}

OPGATE_INLINE void slot8_dot_vec(const double* x, const double* b, const double* g, int64_t n, double* sum,
                                 double* mag) {
  V8 s = load8(sum), m = load8(mag);
  for (int64_t j = 0; j < n; ++j) {
    const V8 t = (load8(x + j * 8) + load8(b + j * 8)) * g[j];
    s += t;
    m += abs8(t);
  }
  store8(sum, s);
  store8(mag, m);
}

// kRows rows at a time: kRows independent 8-wide sums per k step hide the add latency.
template <int kRows>
OPGATE_INLINE void gemm_rows_vec(const double* a, int64_t lda, int64_t kdim, const double* panel, double* out,
                                 int64_t ldo, bool accumulate) {
  V8 acc[kRows];
  for (int r = 0; r < kRows; ++r) acc[r] = accumulate ? load8(out + r * ldo) : splat8(0);
  for (int64_t k = 0; k < kdim; ++k) {
    const V8 b = load8(panel + k * 8);
    for (int r = 0; r < kRows; ++r) acc[r] += b * a[r * lda + k];  // a * b: products commute exactly
  }
  for (int r = 0; r < kRows; ++r) store8(out + r * ldo, acc[r]);
}

template <int kRows>
OPGATE_INLINE void gemm_panel8_vec(const double* a, int64_t rows, int64_t lda, int64_t kdim, const double* panel,
                                   double* out, int64_t ldo, bool accumulate) {
  int64_t r = 0;
  for (; r + kRows <= rows; r += kRows) {
    gemm_rows_vec<kRows>(a + r * lda, lda, kdim, panel, out + r * ldo, ldo, accumulate);
  }
  for (; r < rows; ++r) gemm_rows_vec<1>(a + r * lda, lda, kdim, panel, out + r * ldo, ldo, accumulate);
}

// NaN patterns take the table, so NaN payloads are the scalar path's too.
OPGATE_INLINE bool any_nan8(const uint16_t* h, bool bf16) {
  bool nan = false;
  for (int k = 0; k < 8; ++k) {
    nan |= bf16 ? (h[k] & 0x7F80) == 0x7F80 && (h[k] & 0x7F) != 0 : (h[k] & 0x7C00) == 0x7C00 && (h[k] & 0x3FF) != 0;
  }
  return nan;
}

// bf16 by a shift into float (exact), fp16 by the table.
OPGATE_INLINE void halves_to_double_vec(const uint16_t* src, int64_t count, bool bf16, double* dst) {
  const double* tab = exact_half_values(bf16);
  if (!bf16) {
    for (int64_t i = 0; i < count; ++i) dst[i] = tab[src[i]];
    return;
  }
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    if (any_nan8(src + i, bf16)) {
      for (int k = 0; k < 8; ++k) dst[i + k] = tab[src[i + k]];
      continue;
    }
    for (int k = 0; k < 8; ++k) {
      const uint32_t bits = static_cast<uint32_t>(src[i + k]) << 16;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      dst[i + k] = static_cast<double>(f);
    }
  }
  for (; i < count; ++i) dst[i] = tab[src[i]];
}

}  // namespace
}  // namespace opgate::math

// Defines the kernels of one path and its table simd_paths::<suffix>: `attr` is the path's target
// attribute (empty for a baseline ISA), `halves` its halves_to_double, `gemm_rows` the rows of a
// gemm_panel8 register tile. Expanded inside namespace opgate::math.
#define OPGATE_SIMD_PATH(suffix, attr, halves, gemm_rows)                                                    \
  namespace {                                                                                                    \
  attr void gemm_panel8_##suffix(const double* a, int64_t rows, int64_t lda, int64_t kdim, const double* panel,  \
                                 double* out, int64_t ldo, bool accumulate) {                                    \
    gemm_panel8_vec<gemm_rows>(a, rows, lda, kdim, panel, out, ldo, accumulate);                                 \
  }                                                                                                              \
  attr void dot8_abs_##suffix(const double* x, int64_t heads, const double* y, int64_t n, double* dot,           \
                              double* mag) {                                                                     \
    dot8_abs_vec(x, heads, y, n, dot, mag);                                                                      \
  }                                                                                                              \
  attr void scaled_add_##suffix(double* acc, double a, const double* x, int64_t n) {                             \
    scaled_add_vec(acc, a, x, n);                                                                                \
  }                                                                                                              \
  attr void deviation_add_##suffix(double* dev, double* wsum, double* tail, const double* x, const double* c,    \
                                   const double* abs_x, double wd, double w, double f, int64_t n) {              \
    deviation_add_vec(dev, wsum, tail, x, c, abs_x, wd, w, f, n);                                                \
  }                                                                                                              \
  attr void slot8_dot_##suffix(const double* x, const double* b, const double* g, int64_t n, double* sum,        \
                               double* mag) {                                                                    \
    slot8_dot_vec(x, b, g, n, sum, mag);                                                                         \
  }                                                                                                              \
  attr void halves_to_double_##suffix(const uint16_t* src, int64_t count, bool bf16, double* dst) {              \
    halves(src, count, bf16, dst);                                                                               \
  }                                                                                                              \
  }                                                                                                              \
  const Kernels simd_paths::suffix = {dot8_abs_##suffix,  scaled_add_##suffix,  deviation_add_##suffix,          \
                                      slot8_dot_##suffix, gemm_panel8_##suffix, halves_to_double_##suffix};
