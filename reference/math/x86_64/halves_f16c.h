// Exact fp16/bf16 -> fp32/fp64 conversion of blocks of 8 on x86-64's AVX2 and AVX-512 paths: fp16
// through F16C, bf16 by a 16-bit shift into fp32, then fp32 -> fp64, all exact. A block holding an
// Inf or NaN pattern takes the table of exact values (so NaN payloads are the scalar path's). For the
// x86_64 ISA files only; internal linkage (inline: a file uses what it needs), so each file keeps its
// own copy under its own target.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "reference/math/shared_simd.h"

namespace opgate::math {
namespace {

// Whether one of the 8 patterns at `h` is above `finite_max` in magnitude.
__attribute__((target("avx2,f16c"), always_inline)) inline bool any_above8(__m128i h, uint16_t finite_max) {
  const __m128i magnitude = _mm_and_si128(h, _mm_set1_epi16(0x7FFF));
  return _mm_movemask_epi8(_mm_cmpgt_epi16(magnitude, _mm_set1_epi16(static_cast<int16_t>(finite_max)))) != 0;
}

__attribute__((target("avx2,f16c"), always_inline)) inline __m256 widen8(__m128i h, bool bf16) {
  return bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
}

// dst[i] = the exact double of each pattern; NaN blocks (magnitude above the infinity's) by tab,
// exact_half_values(bf16) (also the row converter of the products' panels, shared_gemm_vec.h).
__attribute__((target("avx2,f16c"))) inline void halves_to_double_f16c_tab(const uint16_t* src, int64_t count,
                                                                            bool bf16, const double* tab,
                                                                            double* dst) {
  const uint16_t infinity = bf16 ? 0x7F80 : 0x7C00;
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    if (any_above8(h, infinity)) {
      for (int k = 0; k < 8; ++k) dst[i + k] = tab[src[i + k]];
      continue;
    }
    const __m256 f = widen8(h, bf16);
    _mm256_storeu_pd(dst + i, _mm256_cvtps_pd(_mm256_castps256_ps128(f)));
    _mm256_storeu_pd(dst + i + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));
  }
  for (; i < count; ++i) dst[i] = tab[src[i]];
}

__attribute__((target("avx2,f16c"))) inline void halves_to_double_f16c(const uint16_t* src, int64_t count, bool bf16,
                                                                        double* dst) {
  halves_to_double_f16c_tab(src, count, bf16, exact_half_values(bf16), dst);
}

// dst[i] = the exact float of each pattern; Inf and NaN blocks (magnitude above the largest finite
// pattern's) by the table, as the scalar path (float of the exact double).
__attribute__((target("avx2,f16c"))) inline void halves_to_float_f16c(const uint16_t* src, int64_t count, bool bf16,
                                                                      float* dst) {
  const double* tab = exact_half_values(bf16);
  const uint16_t finite_max = bf16 ? 0x7F7F : 0x7BFF;
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    if (any_above8(h, finite_max)) {
      for (int k = 0; k < 8; ++k) dst[i + k] = static_cast<float>(tab[src[i + k]]);
      continue;
    }
    _mm256_storeu_ps(dst + i, widen8(h, bf16));
  }
  for (; i < count; ++i) dst[i] = static_cast<float>(tab[src[i]]);
}

}  // namespace
}  // namespace opgate::math
