// Exact fp16/bf16 -> fp32/fp64 conversion of blocks of 8 on aarch64's NEON path: fp16 by FCVTL
// (vcvt_f32_f16), bf16 by a 16-bit shift into fp32, then fp32 -> fp64 (FCVTL again), all exact. A
// block holding an Inf or NaN pattern takes the table of exact values (so NaN payloads are the
// scalar path's). For the aarch64 ISA files only; internal linkage (inline: a file uses what it
// needs).
#pragma once

#include <arm_neon.h>

#include <cstdint>

#include "reference/math/shared_simd.h"

namespace opgate::math {
namespace {

// Whether one of the 8 patterns is above `finite_max` in magnitude.
inline bool any_above8(uint16x8_t h, uint16_t finite_max) {
  const uint16x8_t above = vcgtq_u16(vandq_u16(h, vdupq_n_u16(0x7FFF)), vdupq_n_u16(finite_max));
  return vmaxvq_u16(above) != 0;
}

// The 8 patterns as fp32 (low 4, high 4).
inline float32x4x2_t widen8(uint16x8_t h, bool bf16) {
  if (bf16) {
    return {{vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16)),
             vreinterpretq_f32_u32(vshll_n_u16(vget_high_u16(h), 16))}};
  }
  return {{vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h))), vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h)))}};
}

// dst[i] = the exact double of each pattern; NaN blocks (magnitude above the infinity's) by tab,
// exact_half_values(bf16) (also the row converter of the products' panels, shared_gemm_vec.h).
inline void halves_to_double_fcvtl_tab(const uint16_t* src, int64_t count, bool bf16, const double* tab,
                                       double* dst) {
  const uint16_t infinity = bf16 ? 0x7F80 : 0x7C00;
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const uint16x8_t h = vld1q_u16(src + i);
    if (any_above8(h, infinity)) {
      for (int k = 0; k < 8; ++k) dst[i + k] = tab[src[i + k]];
      continue;
    }
    const float32x4x2_t f = widen8(h, bf16);
    vst1q_f64(dst + i, vcvt_f64_f32(vget_low_f32(f.val[0])));
    vst1q_f64(dst + i + 2, vcvt_high_f64_f32(f.val[0]));
    vst1q_f64(dst + i + 4, vcvt_f64_f32(vget_low_f32(f.val[1])));
    vst1q_f64(dst + i + 6, vcvt_high_f64_f32(f.val[1]));
  }
  for (; i < count; ++i) dst[i] = tab[src[i]];
}

inline void halves_to_double_fcvtl(const uint16_t* src, int64_t count, bool bf16, double* dst) {
  halves_to_double_fcvtl_tab(src, count, bf16, exact_half_values(bf16), dst);
}

// dst[i] = the exact float of each pattern; Inf and NaN blocks (magnitude above the largest finite
// pattern's) by the table, as the scalar path (float of the exact double).
inline void halves_to_float_fcvtl(const uint16_t* src, int64_t count, bool bf16, float* dst) {
  const double* tab = exact_half_values(bf16);
  const uint16_t finite_max = bf16 ? 0x7F7F : 0x7BFF;
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const uint16x8_t h = vld1q_u16(src + i);
    if (any_above8(h, finite_max)) {
      for (int k = 0; k < 8; ++k) dst[i + k] = static_cast<float>(tab[src[i + k]]);
      continue;
    }
    const float32x4x2_t f = widen8(h, bf16);
    vst1q_f32(dst + i, f.val[0]);
    vst1q_f32(dst + i + 4, f.val[1]);
  }
  for (; i < count; ++i) dst[i] = static_cast<float>(tab[src[i]]);
}

}  // namespace
}  // namespace opgate::math
