// Philox4x32-10 on 8 counters per ymm vector (AVX2), two vectors in flight to hide the multiply
// latency, the scalar block function for the tail. The 32x32 -> 64 products come from
// _mm256_mul_epu32 on the even and (shifted) odd 32-bit lanes; their halves are blended back into
// lane order. The target attribute is on this file's function only (core/isa.h: no shared inline
// code is compiled for AVX2).
#include <immintrin.h>

#include "core/philox_lanes.h"

namespace opgate::philox_lanes {
namespace {

__attribute__((target("avx2"))) void run_avx2(uint64_t key, uint64_t stream, uint64_t first, int64_t n,
                                              Reduce reduce, uint64_t* out) {
  constexpr int kLanes = 8;
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(kM0));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(kM1));
  const __m256i sign = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i s0 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream)));
  const __m256i s1 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream >> 32)));
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    __m256i c[2][4];
    for (int v = 0; v < 2; ++v) {
      const uint64_t base = first + static_cast<uint64_t>(i + v * kLanes);
      const __m256i lo = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(base)));
      const __m256i sum = _mm256_add_epi32(lo, lane);
      // Unsigned sum < lo means the low word wrapped: carry 1 into the high word (cmpgt gives -1).
      const __m256i carry = _mm256_cmpgt_epi32(_mm256_xor_si256(lo, sign), _mm256_xor_si256(sum, sign));
      c[v][0] = sum;
      c[v][1] = _mm256_sub_epi32(_mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(base >> 32))), carry);
      c[v][2] = s0;
      c[v][3] = s1;
    }
    uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
    for (int round = 0; round < kRounds; ++round) {
      if (round > 0) {
        k0 += kW0;
        k1 += kW1;
      }
      const __m256i vk0 = _mm256_set1_epi32(static_cast<int>(k0));
      const __m256i vk1 = _mm256_set1_epi32(static_cast<int>(k1));
      for (int v = 0; v < 2; ++v) {
        const __m256i pe0 = _mm256_mul_epu32(c[v][0], m0);
        const __m256i po0 = _mm256_mul_epu32(_mm256_srli_epi64(c[v][0], 32), m0);
        const __m256i pe1 = _mm256_mul_epu32(c[v][2], m1);
        const __m256i po1 = _mm256_mul_epu32(_mm256_srli_epi64(c[v][2], 32), m1);
        const __m256i lo0 = _mm256_blend_epi32(pe0, _mm256_slli_epi64(po0, 32), 0xAA);
        const __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(pe0, 32), po0, 0xAA);
        const __m256i lo1 = _mm256_blend_epi32(pe1, _mm256_slli_epi64(po1, 32), 0xAA);
        const __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(pe1, 32), po1, 0xAA);
        c[v][0] = _mm256_xor_si256(_mm256_xor_si256(hi1, c[v][1]), vk0);
        c[v][1] = lo1;
        c[v][2] = _mm256_xor_si256(_mm256_xor_si256(hi0, c[v][3]), vk1);
        c[v][3] = lo0;
      }
    }
    for (int v = 0; v < 2; ++v) {
      alignas(32) uint32_t w[4][kLanes];
      for (int word = 0; word < 4; ++word) _mm256_store_si256(reinterpret_cast<__m256i*>(w[word]), c[v][word]);
      reduce_words<kLanes>(reduce, w, out + i + v * kLanes);
    }
  }
  run_scalar(key, stream, first + static_cast<uint64_t>(i), n - i, reduce, out + i);
}

}  // namespace

const Kernels paths::avx2 = {run_avx2};

}  // namespace opgate::philox_lanes
