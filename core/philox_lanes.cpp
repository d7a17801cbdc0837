// Philox4x32-10 on 8 (AVX2) or 16 (AVX-512) counters per vector, two vectors in flight to hide the
// multiply latency, with the scalar block function as fallback and for the tails. The 32x32 -> 64
// products come from _mm*_mul_epu32 on the even and (shifted) odd 32-bit lanes; their halves are
// blended back into lane order. Runtime dispatch: the widest path the CPU and OS support, unless
// set_rng_path pinned another (tests compare every path with the scalar one bit for bit).

#include "core/philox_lanes.h"

#include <immintrin.h>

#include <array>
#include <atomic>

#include <fmt/format.h>

#include "core/status.h"

namespace opgate {
namespace philox_lanes {
namespace {

void reduce_lane(Reduce reduce, uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3, uint64_t& out) {
  if (reduce == Reduce::kLow64) {
    out = static_cast<uint64_t>(w0) | (static_cast<uint64_t>(w1) << 32);
  } else {
    out += static_cast<uint64_t>(w0) + w1 + w2 + w3;
  }
}

void run_scalar(uint64_t key, uint64_t stream, uint64_t first, int64_t n, Reduce reduce, uint64_t* out) {
  const std::array<uint32_t, 2> k = {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t index = first + static_cast<uint64_t>(i);
    const std::array<uint32_t, 4> w =
        philox4x32_10({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                       static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)},
                      k);
    reduce_lane(reduce, w[0], w[1], w[2], w[3], out[i]);
  }
}

// Stores four word vectors of `lanes` counters and reduces them into out[0, lanes).
template <int lanes>
inline void reduce_words(Reduce reduce, const uint32_t (&w)[4][lanes], uint64_t* out) {
  if (reduce == Reduce::kLow64) {
    for (int j = 0; j < lanes; ++j) out[j] = static_cast<uint64_t>(w[0][j]) | (static_cast<uint64_t>(w[1][j]) << 32);
  } else {
    for (int j = 0; j < lanes; ++j) {
      out[j] += static_cast<uint64_t>(w[0][j]) + w[1][j] + w[2][j] + w[3][j];
    }
  }
}

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

RngPath widest_supported() {
  if (rng_path_supported(RngPath::kAvx512)) return RngPath::kAvx512;
  if (rng_path_supported(RngPath::kAvx2)) return RngPath::kAvx2;
  return RngPath::kScalar;
}

std::atomic<RngPath>& current_path() {
  static std::atomic<RngPath> path{widest_supported()};
  return path;
}

}  // namespace

void run(RngPath path, uint64_t key, uint64_t stream, uint64_t first, int64_t n, Reduce reduce, uint64_t* out) {
  switch (path) {
    case RngPath::kAvx512: run_avx512(key, stream, first, n, reduce, out); return;
    case RngPath::kAvx2: run_avx2(key, stream, first, n, reduce, out); return;
    case RngPath::kScalar: run_scalar(key, stream, first, n, reduce, out); return;
  }
}

}  // namespace philox_lanes

const char* rng_path_name(RngPath path) {
  switch (path) {
    case RngPath::kScalar: return "scalar";
    case RngPath::kAvx2: return "avx2";
    case RngPath::kAvx512: return "avx512";
  }
  return "invalid";
}

bool rng_path_supported(RngPath path) {
  // __builtin_cpu_supports also checks that the OS saves the wide registers (XCR0).
  switch (path) {
    case RngPath::kScalar: return true;
    case RngPath::kAvx2: return __builtin_cpu_supports("avx2");
    case RngPath::kAvx512: return __builtin_cpu_supports("avx512f");
  }
  return false;
}

RngPath rng_path() { return philox_lanes::current_path().load(std::memory_order_relaxed); }

void set_rng_path(RngPath path) {
  OPGATE_CHECK(rng_path_supported(path), fmt::format("this CPU has no {} path for the RNG", rng_path_name(path)));
  philox_lanes::current_path().store(path, std::memory_order_relaxed);
}

}  // namespace opgate
