// Philox4x32-10 on 4 counters per q register (NEON, aarch64's baseline: no target attribute), four
// vectors in flight to hide the multiply latency, the scalar block function for the tail. The
// 32x32 -> 64 products come from UMULL / UMULL2 (vmull_u32, vmull_high_u32) of lanes 0-1 and 2-3;
// UZP1 / UZP2 take their low and high words back into lane order.
#include <arm_neon.h>

#include "core/philox_lanes.h"

namespace opgate::philox_lanes {
namespace {

// lo[j] and hi[j]: the low and high words of the 64-bit product a[j] * m.
inline __attribute__((always_inline)) void mul_hi_lo(uint32x4_t a, uint32x4_t m, uint32x4_t& lo, uint32x4_t& hi) {
  const uint32x4_t p01 = vreinterpretq_u32_u64(vmull_u32(vget_low_u32(a), vget_low_u32(m)));
  const uint32x4_t p23 = vreinterpretq_u32_u64(vmull_high_u32(a, m));
  lo = vuzp1q_u32(p01, p23);  // little-endian: the low word of each product is its even word
  hi = vuzp2q_u32(p01, p23);
}

// One Philox round of one vector of counters (always inlined: called once per vector, so the
// counters stay in registers).
inline __attribute__((always_inline)) void philox_round(uint32x4_t (&c)[4], uint32x4_t m0, uint32x4_t m1,
                                                        uint32x4_t vk0, uint32x4_t vk1) {
  uint32x4_t lo0, hi0, lo1, hi1;
  mul_hi_lo(c[0], m0, lo0, hi0);
  mul_hi_lo(c[2], m1, lo1, hi1);
  c[0] = veorq_u32(veorq_u32(hi1, c[1]), vk0);
  c[1] = lo1;
  c[2] = veorq_u32(veorq_u32(hi0, c[3]), vk1);
  c[3] = lo0;
}

// The counters {base + lane, stream} of one vector.
inline __attribute__((always_inline)) void load_counters(uint32x4_t (&c)[4], uint64_t base, uint32x4_t lane,
                                                         uint32x4_t s0, uint32x4_t s1) {
  const uint32x4_t lo = vdupq_n_u32(static_cast<uint32_t>(base));
  const uint32x4_t sum = vaddq_u32(lo, lane);
  // Unsigned sum < lo means the low word wrapped: carry 1 into the high word (the mask is -1).
  const uint32x4_t carry = vcltq_u32(sum, lo);
  c[0] = sum;
  c[1] = vsubq_u32(vdupq_n_u32(static_cast<uint32_t>(base >> 32)), carry);
  c[2] = s0;
  c[3] = s1;
}

void run_neon(uint64_t key, uint64_t stream, uint64_t first, int64_t n, Reduce reduce, uint64_t* out) {
  constexpr int kLanes = 4;
  constexpr int kVectors = 4;  // written out below: a loop over them would keep c in memory
  const uint32x4_t m0 = vdupq_n_u32(kM0);
  const uint32x4_t m1 = vdupq_n_u32(kM1);
  const uint32_t lane_init[kLanes] = {0, 1, 2, 3};
  const uint32x4_t lane = vld1q_u32(lane_init);
  const uint32x4_t s0 = vdupq_n_u32(static_cast<uint32_t>(stream));
  const uint32x4_t s1 = vdupq_n_u32(static_cast<uint32_t>(stream >> 32));
  int64_t i = 0;
  for (; i + kVectors * kLanes <= n; i += kVectors * kLanes) {
    const uint64_t base = first + static_cast<uint64_t>(i);
    uint32x4_t c0[4], c1[4], c2[4], c3[4];
    load_counters(c0, base, lane, s0, s1);
    load_counters(c1, base + kLanes, lane, s0, s1);
    load_counters(c2, base + 2 * kLanes, lane, s0, s1);
    load_counters(c3, base + 3 * kLanes, lane, s0, s1);
    uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
    for (int round = 0; round < kRounds; ++round) {
      if (round > 0) {
        k0 += kW0;
        k1 += kW1;
      }
      const uint32x4_t vk0 = vdupq_n_u32(k0);
      const uint32x4_t vk1 = vdupq_n_u32(k1);
      philox_round(c0, m0, m1, vk0, vk1);
      philox_round(c1, m0, m1, vk0, vk1);
      philox_round(c2, m0, m1, vk0, vk1);
      philox_round(c3, m0, m1, vk0, vk1);
    }
    const uint32x4_t* c[kVectors] = {c0, c1, c2, c3};
    for (int v = 0; v < kVectors; ++v) {
      uint32_t w[4][kLanes];
      for (int word = 0; word < 4; ++word) vst1q_u32(w[word], c[v][word]);
      reduce_words<kLanes>(reduce, w, out + i + v * kLanes);
    }
  }
  run_scalar(key, stream, first + static_cast<uint64_t>(i), n - i, reduce, out + i);
}

}  // namespace

const Kernels paths::neon = {run_neon};

}  // namespace opgate::philox_lanes
