// Philox4x32-10 on 16 counters per zmm vector (AVX-512F), two vectors in flight, the scalar block
// function for the tail: as the AVX2 path, with mask blends, an unsigned compare for the carry and
// one ternary-logic xor of three operands.
#include <immintrin.h>

#include "core/philox_lanes.h"

namespace opgate::philox_lanes {
namespace {

// GCC 12 warns that the intrinsics' internal _mm512_undefined_epi32() pass-through "may be used
// uninitialized" (GCC bug 105593, fixed in 13); the value is never read.
#if defined(__GNUC__) && !defined(__clang__)  // a GCC-only warning; clang rejects the unknown group
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
__attribute__((target("avx512f"))) void run_avx512(uint64_t key, uint64_t stream, uint64_t first, int64_t n,
                                                   Reduce reduce, uint64_t* out) {
  constexpr int kLanes = 16;
  constexpr __mmask16 kOdd = 0xAAAA;
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(kM0));
  const __m512i m1 = _mm512_set1_epi32(static_cast<int>(kM1));
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i s0 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream)));
  const __m512i s1 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream >> 32)));
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    __m512i c[2][4];
    for (int v = 0; v < 2; ++v) {
      const uint64_t base = first + static_cast<uint64_t>(i + v * kLanes);
      const __m512i lo = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(base)));
      const __m512i hi = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(base >> 32)));
      const __m512i sum = _mm512_add_epi32(lo, lane);
      const __mmask16 wrapped = _mm512_cmplt_epu32_mask(sum, lo);
      c[v][0] = sum;
      c[v][1] = _mm512_mask_add_epi32(hi, wrapped, hi, _mm512_set1_epi32(1));
      c[v][2] = s0;
      c[v][3] = s1;
    }
    uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
    for (int round = 0; round < kRounds; ++round) {
      if (round > 0) {
        k0 += kW0;
        k1 += kW1;
      }
      const __m512i vk0 = _mm512_set1_epi32(static_cast<int>(k0));
      const __m512i vk1 = _mm512_set1_epi32(static_cast<int>(k1));
      for (int v = 0; v < 2; ++v) {
        const __m512i pe0 = _mm512_mul_epu32(c[v][0], m0);
        const __m512i po0 = _mm512_mul_epu32(_mm512_srli_epi64(c[v][0], 32), m0);
        const __m512i pe1 = _mm512_mul_epu32(c[v][2], m1);
        const __m512i po1 = _mm512_mul_epu32(_mm512_srli_epi64(c[v][2], 32), m1);
        const __m512i lo0 = _mm512_mask_blend_epi32(kOdd, pe0, _mm512_slli_epi64(po0, 32));
        const __m512i hi0 = _mm512_mask_blend_epi32(kOdd, _mm512_srli_epi64(pe0, 32), po0);
        const __m512i lo1 = _mm512_mask_blend_epi32(kOdd, pe1, _mm512_slli_epi64(po1, 32));
        const __m512i hi1 = _mm512_mask_blend_epi32(kOdd, _mm512_srli_epi64(pe1, 32), po1);
        // hi ^ c ^ k in one ternary-logic instruction (truth table 0x96 = a ^ b ^ c).
        c[v][0] = _mm512_ternarylogic_epi32(hi1, c[v][1], vk0, 0x96);
        c[v][1] = lo1;
        c[v][2] = _mm512_ternarylogic_epi32(hi0, c[v][3], vk1, 0x96);
        c[v][3] = lo0;
      }
    }
    for (int v = 0; v < 2; ++v) {
      alignas(64) uint32_t w[4][kLanes];
      for (int word = 0; word < 4; ++word) _mm512_store_si512(w[word], c[v][word]);
      reduce_words<kLanes>(reduce, w, out + i + v * kLanes);
    }
  }
  run_scalar(key, stream, first + static_cast<uint64_t>(i), n - i, reduce, out + i);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace

const Kernels paths::avx512 = {run_avx512};

}  // namespace opgate::philox_lanes
