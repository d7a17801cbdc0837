// The kernels of shared_simd.h: one plain scalar formulation, and one vector formulation (GCC
// vector extensions, 8 doubles) compiled into SSE2, AVX2 and AVX-512 functions by target
// attributes. Vector operations are element-wise, so a vector of 8 holds 8 independent sums.
#include "reference/math/shared_simd.h"

#include <cpuid.h>
#include <immintrin.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/vector_memory.h"
#include "reference/math/shared_v8.h"

// The vector helpers below are always inlined, so their vector arguments never cross a call.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace opgate::math {
namespace {

// ---- scalar formulation -------------------------------------------------------------------------

void dot8_abs_scalar(const double* x, int64_t heads, const double* y, int64_t n, double* dot, double* mag) {
  for (int64_t h = 0; h < heads; ++h) {
    const double* xh = x + h * n;
    double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    double lane_abs[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t i = 0; i < n; ++i) {
      const double v = xh[i] * y[i];
      lane[i % 8] += v;
      lane_abs[i % 8] += std::fabs(v);
    }
    dot[h] = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    mag[h] = ((lane_abs[0] + lane_abs[1]) + (lane_abs[2] + lane_abs[3])) +
             ((lane_abs[4] + lane_abs[5]) + (lane_abs[6] + lane_abs[7]));
  }
}

void scaled_add_scalar(double* acc, double a, const double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = acc[i] + a * x[i];
}

void deviation_add_scalar(double* dev, double* wsum, double* tail, const double* x, const double* c,
                          const double* abs_x, double wd, double w, double f, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double m = abs_x != nullptr ? abs_x[i] : std::fabs(x[i]);
    dev[i] += wd * std::fabs(x[i] - c[i]);
    wsum[i] += w * m;
    tail[i] += f * m;
  }
}

void slot8_dot_scalar(const double* x, const double* b, const double* g, int64_t n, double* sum, double* mag) {
  for (int s = 0; s < 8; ++s) {
    for (int64_t j = 0; j < n; ++j) {
      const double t = (x[j * 8 + s] + b[j * 8 + s]) * g[j];
      sum[s] += t;
      mag[s] += std::fabs(t);
    }
  }
}

void gemm_panel8_scalar(const double* a, int64_t rows, int64_t lda, int64_t kdim, const double* panel, double* out,
                        int64_t ldo, bool accumulate) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < 8; ++j) {
      double acc = accumulate ? out[r * ldo + j] : 0.0;
      for (int64_t k = 0; k < kdim; ++k) acc += a[r * lda + k] * panel[k * 8 + j];
      out[r * ldo + j] = acc;
    }
  }
}

const double* half_table(bool bf16) {
  static const std::vector<double> half = [] {
    std::vector<double> v(65536);
    for (uint32_t b = 0; b < 65536; ++b) v[b] = f16_to_double(static_cast<uint16_t>(b));
    return v;
  }();
  static const std::vector<double> bfloat = [] {
    std::vector<double> v(65536);
    for (uint32_t b = 0; b < 65536; ++b) v[b] = bf16_to_double(static_cast<uint16_t>(b));
    return v;
  }();
  return bf16 ? bfloat.data() : half.data();
}

void halves_to_double_scalar(const uint16_t* src, int64_t count, bool bf16, double* dst) {
  const double* tab = half_table(bf16);
  for (int64_t i = 0; i < count; ++i) dst[i] = tab[src[i]];
}

// ---- vector formulation -------------------------------------------------------------------------

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
  deviation_add_scalar(dev + i, wsum + i, tail + i, x + i, c + i, abs_x != nullptr ? abs_x + i : nullptr, wd, w, f,
                       n - i);
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
  if (!bf16) return halves_to_double_scalar(src, count, bf16, dst);
  const double* tab = half_table(bf16);
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

// fp16 through F16C, bf16 by a 16-bit shift into fp32, then fp32 -> fp64: all exact. A NaN
// pattern ((bits & 0x7FFF) above the infinity's) sends its block of 8 to the table.
__attribute__((target("avx2,f16c"))) void halves_to_double_f16c(const uint16_t* src, int64_t count, bool bf16,
                                                                 double* dst) {
  const double* tab = half_table(bf16);
  const __m128i magnitude = _mm_set1_epi16(0x7FFF);
  const __m128i infinity = _mm_set1_epi16(static_cast<int16_t>(bf16 ? 0x7F80 : 0x7C00));
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    if (_mm_movemask_epi8(_mm_cmpgt_epi16(_mm_and_si128(h, magnitude), infinity)) != 0) {
      for (int k = 0; k < 8; ++k) dst[i + k] = tab[src[i + k]];
      continue;
    }
    const __m256 f = bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
    _mm256_storeu_pd(dst + i, _mm256_cvtps_pd(_mm256_castps256_ps128(f)));
    _mm256_storeu_pd(dst + i + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));
  }
  for (; i < count; ++i) dst[i] = tab[src[i]];
}

#define OPGATE_PATH(suffix, attr, f16c, gemm_rows)                                                               \
  attr void gemm_panel8_##suffix(const double* a, int64_t rows, int64_t lda, int64_t kdim, const double* panel,   \
                                 double* out, int64_t ldo, bool accumulate) {                                     \
    gemm_panel8_vec<gemm_rows>(a, rows, lda, kdim, panel, out, ldo, accumulate);                                  \
  }                                                                                                               \
  attr void dot8_abs_##suffix(const double* x, int64_t heads, const double* y, int64_t n, double* dot,            \
                              double* mag) {                                                                      \
    dot8_abs_vec(x, heads, y, n, dot, mag);                                                                       \
  }                                                                                                               \
  attr void scaled_add_##suffix(double* acc, double a, const double* x, int64_t n) { scaled_add_vec(acc, a, x, n); } \
  attr void deviation_add_##suffix(double* dev, double* wsum, double* tail, const double* x, const double* c,     \
                                   const double* abs_x, double wd, double w, double f, int64_t n) {               \
    deviation_add_vec(dev, wsum, tail, x, c, abs_x, wd, w, f, n);                                                 \
  }                                                                                                               \
  attr void slot8_dot_##suffix(const double* x, const double* b, const double* g, int64_t n, double* sum,         \
                               double* mag) {                                                                     \
    slot8_dot_vec(x, b, g, n, sum, mag);                                                                          \
  }                                                                                                               \
  attr void halves_to_double_##suffix(const uint16_t* src, int64_t count, bool bf16, double* dst) {               \
    if (f16c) return halves_to_double_f16c(src, count, bf16, dst);                                                \
    halves_to_double_vec(src, count, bf16, dst);                                                                  \
  }                                                                                                               \
  const Kernels kKernels_##suffix = {dot8_abs_##suffix, scaled_add_##suffix, deviation_add_##suffix,              \
                                     slot8_dot_##suffix, gemm_panel8_##suffix, halves_to_double_##suffix};

// Rows per register tile: accumulators in 8 of the 16 xmm/ymm registers (SSE2 2, AVX2 4 rows),
// 8 of the 32 zmm registers (AVX-512, 8 rows).
OPGATE_PATH(sse2, , false, 2)
OPGATE_PATH(avx2, __attribute__((target("avx2,f16c"))), true, 4)
OPGATE_PATH(avx512, __attribute__((target("avx512f,avx2,f16c"))), true, 8)

const Kernels kKernels_scalar = {dot8_abs_scalar,  scaled_add_scalar,  deviation_add_scalar,
                                 slot8_dot_scalar, gemm_panel8_scalar, halves_to_double_scalar};

// F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does not know "f16c".
bool has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

Isa widest() {
  static const Isa best = [] {
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && has_f16c();
    if (avx2 && __builtin_cpu_supports("avx512f")) return Isa::kAvx512;
    return avx2 ? Isa::kAvx2 : Isa::kSse2;
  }();
  return best;
}

std::atomic<int> g_isa{-1};  // -1: the widest

}  // namespace

const double* exact_half_values(bool bf16) { return half_table(bf16); }

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kSse2: return "sse2";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "?";
}

bool isa_supported(Isa isa) { return static_cast<int>(isa) <= static_cast<int>(widest()); }

Isa isa() {
  const int v = g_isa.load(std::memory_order_relaxed);
  if (v >= 0) return static_cast<Isa>(v);
  // OPGATE_ISA=scalar|sse2|avx2|avx512 pins the path (benchmarks; results are the same on all).
  static const Isa from_env = [] {
    const char* env = std::getenv("OPGATE_ISA");
    for (Isa i : {Isa::kScalar, Isa::kSse2, Isa::kAvx2, Isa::kAvx512}) {
      if (env != nullptr && std::strcmp(env, isa_name(i)) == 0 && isa_supported(i)) return i;
    }
    return widest();
  }();
  return from_env;
}

void set_isa(Isa isa) { g_isa.store(isa_supported(isa) ? static_cast<int>(isa) : -1, std::memory_order_relaxed); }

const Kernels& kernels(Isa isa) {
  switch (isa_supported(isa) ? isa : widest()) {
    case Isa::kScalar: return kKernels_scalar;
    case Isa::kSse2: return kKernels_sse2;
    case Isa::kAvx2: return kKernels_avx2;
    case Isa::kAvx512: return kKernels_avx512;
  }
  return kKernels_scalar;
}

}  // namespace opgate::math
