// shared_attention.h's kernels on AVX-512F: the register-blocked formulation (shared_attention_vec.h),
// one zmm register per 8 doubles, fp16 rows through F16C and bf16 rows by a shift, widened to fp64
// in zmm. 4 heads per score block, 4 heads x 2 column vectors per weighted block, 4 heads per
// deviation block (accumulators in about half of the 32 zmm registers).
#include <immintrin.h>

#include "reference/math/shared_attention_vec.h"

namespace opgate::math {
namespace {

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

// The converters of shared_attention_vec.h: with the per-block Inf/NaN test, and without it (for
// calls whose rows were found all finite).
struct F16c512Clean {
  static void halves8(const uint16_t* src, bool bf16, const double* /*tab*/, bool& /*bad*/, double* out) {
    f16c8_512_raw(src, bf16, out);
  }
};
struct F16c512 {
  using Clean = F16c512Clean;
  static void halves8(const uint16_t* src, bool bf16, const double* tab, bool& bad, double* out) {
    f16c8_512(src, bf16, tab, bad, out);
  }
};

}  // namespace

OPGATE_ATTENTION_PATH(avx512, __attribute__((target("avx512f,avx2,f16c"), flatten)), F16c512, 4, 4, 2, 4)

}  // namespace opgate::math
