// The kernels of moe_finalize_routing_v2_grad_kernels.h on NEON, aarch64's baseline (no target
// attribute), 8 floats per pair of q registers: fp16 stores by FCVTN, bf16 stores by the scalar
// integer formulation on 4 lanes, the block sums by pairwise adds (FADDP).
#include <arm_neon.h>

#include "device/emu/moe_finalize_routing_v2_grad_kernels.h"

namespace opgate::emu::moe_finalize_routing_v2_grad {
namespace {

// FCVTN rounds by FPCR: it gives f16_bits's bits (IEEE RNE; NaN with its sign and top payload bits,
// quiet; fp16 subnormals kept) only in the default mode. So the vector stores run only when FPCR
// has round-to-nearest and none of the modes that change a conversion's result: AHP (alternative
// half precision, bit 26), DN (default NaN, 25), FZ (flush to zero, 24), RMode (23:22), FZ16 (19),
// and FEAT_AFP's NEP, AH, FIZ (2:0). Otherwise every element takes the scalar encoder.
bool fpcr_is_ieee() {
  uint64_t fpcr = 0;
  __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
  constexpr uint64_t kModes = (uint64_t{1} << 26) | (uint64_t{1} << 25) | (uint64_t{1} << 24) | (uint64_t{3} << 22) |
                              (uint64_t{1} << 19) | uint64_t{7};
  return (fpcr & kModes) == 0;
}

// Converts the first n - n % 8 elements (none unless fpcr_is_ieee()); returns how many.
int64_t floats_to_f16_neon(const float* v, int64_t n, uint16_t* dst) {
  if (!fpcr_is_ieee()) return 0;
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const float16x4_t lo = vcvt_f16_f32(vld1q_f32(v + j));
    const float16x8_t h = vcvt_high_f16_f32(lo, vld1q_f32(v + j + 4));
    vst1q_u16(dst + j, vreinterpretq_u16_f16(h));
  }
  return j;
}

// bf16_bits on 4 lanes: the same wrapping integer operations, then the low 16 bits (XTN), which is
// the scalar cast to uint16_t.
inline __attribute__((always_inline)) uint16x4_t bf16_lanes(float32x4_t f) {
  const uint32x4_t u = vreinterpretq_u32_f32(f);
  const uint32x4_t high = vshrq_n_u32(u, 16);
  const uint32x4_t rounded = vshrq_n_u32(vaddq_u32(vaddq_u32(u, vdupq_n_u32(0x7FFF)), vandq_u32(high, vdupq_n_u32(1))), 16);
  const uint32x4_t nan = vcgtq_u32(vandq_u32(u, vdupq_n_u32(0x7FFFFFFF)), vdupq_n_u32(0x7F800000));
  return vmovn_u32(vbslq_u32(nan, vorrq_u32(high, vdupq_n_u32(0x40)), rounded));
}

// Converts the first n - n % 8 elements; returns how many. Integer only: FPCR cannot change it.
int64_t floats_to_bf16_neon(const float* v, int64_t n, uint16_t* dst) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    vst1q_u16(dst + j, vcombine_u16(bf16_lanes(vld1q_f32(v + j)), bf16_lanes(vld1q_f32(v + j + 4))));
  }
  return j;
}

// Each block's tree by FADDP: (l0 + l1, l2 + l3, l4 + l5, l6 + l7), then (s01 + s23, s45 + s67),
// then their sum; the same operands in the same order as the scalar tree, so the same bits.
float add_full_blocks_neon(float acc, const float* v, int64_t n) {
  for (int64_t o = 0; o + kBlock <= n; o += kBlock) {
    const float32x4_t pairs = vpaddq_f32(vld1q_f32(v + o), vld1q_f32(v + o + 4));
    const float32x4_t quads = vpaddq_f32(pairs, pairs);
    acc += vpadds_f32(vget_low_f32(quads));
  }
  return acc;
}

}  // namespace

const Kernels paths::neon = {floats_to_f16_neon, floats_to_bf16_neon, add_full_blocks_neon};

}  // namespace opgate::emu::moe_finalize_routing_v2_grad
