// The fp16 / bf16 stores of moe_finalize_routing_v2_grad_kernels.h on AVX2 + F16C, 8 floats per
// ymm vector (the AVX-512 path runs them too); the block sums are the SSE2 row's. The target
// attributes are on this file's functions only.
#include <immintrin.h>

#include "device/emu/moe_finalize_routing_v2_grad_kernels.h"

namespace opgate::emu::moe_finalize_routing_v2_grad {
namespace {

// F16C's conversion with the rounding given in the instruction (RNE; MXCSR is not read) is the
// IEEE one, NaN included (sign and top payload bits kept, quiet bit set): the same bits as
// f16_bits. Converts the first n - n % 8 elements; returns how many.
__attribute__((target("avx2,f16c"))) int64_t floats_to_f16_f16c(const float* v, int64_t n, uint16_t* dst) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(v + j), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j), h);
  }
  return j;
}

// bf16_bits on 8 lanes: the same integer operations, then a pack of the 16-bit results (each
// <= 0xFFFF, so the unsigned saturation of packus never changes one). Converts the first
// n - n % 8 elements; returns how many.
__attribute__((target("avx2"))) int64_t floats_to_bf16_avx2(const float* v, int64_t n, uint16_t* dst) {
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i bias = _mm256_set1_epi32(0x7FFF);
  const __m256i magnitude = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i inf = _mm256_set1_epi32(0x7F800000);
  const __m256i quiet = _mm256_set1_epi32(0x40);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(v + j));
    const __m256i high = _mm256_srli_epi32(u, 16);
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, bias), _mm256_and_si256(high, one)), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, magnitude), inf);  // both operands >= 0
    const __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(high, quiet), nan);
    // packus works per 128-bit half: (r0..r3, r0..r3 | r4..r7, r4..r7); qwords 0 and 2 are r0..r7.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j), _mm256_castsi256_si128(packed));
  }
  return j;
}

}  // namespace

const Kernels paths::avx2 = {floats_to_f16_f16c, floats_to_bf16_avx2, paths::add_full_blocks_sse2};

}  // namespace opgate::emu::moe_finalize_routing_v2_grad
