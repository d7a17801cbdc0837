// halves_to_float: F16C (fp16) or a 16-bit shift (bf16) into float, both exact; blocks of 8 holding
// an Inf or NaN pattern take the table of core/dtype.h's values.
#include "reference/math/shared_half.h"

#include <immintrin.h>

#include "reference/math/shared_simd.h"

namespace opgate::math {
namespace {

void halves_to_float_table(const uint16_t* src, int64_t count, bool bf16, float* dst) {
  const double* tab = exact_half_values(bf16);
  for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<float>(tab[src[i]]);
}

__attribute__((target("avx2,f16c"))) void halves_to_float_f16c(const uint16_t* src, int64_t count, bool bf16,
                                                               float* dst) {
  const __m128i magnitude = _mm_set1_epi16(0x7FFF);
  const __m128i finite_max = _mm_set1_epi16(static_cast<int16_t>(bf16 ? 0x7F7F : 0x7BFF));
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    if (_mm_movemask_epi8(_mm_cmpgt_epi16(_mm_and_si128(h, magnitude), finite_max)) != 0) {
      halves_to_float_table(src + i, 8, bf16, dst + i);
      continue;
    }
    const __m256 f = bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
    _mm256_storeu_ps(dst + i, f);
  }
  halves_to_float_table(src + i, count - i, bf16, dst + i);
}

}  // namespace

void halves_to_float(const uint16_t* src, int64_t count, bool bf16, float* dst) {
  if (isa() == Isa::kAvx2 || isa() == Isa::kAvx512) return halves_to_float_f16c(src, count, bf16, dst);
  halves_to_float_table(src, count, bf16, dst);
}

}  // namespace opgate::math
