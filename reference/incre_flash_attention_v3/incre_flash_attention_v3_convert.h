// Bulk conversion of device-dtype elements to double or float for the IncreFlashAttentionV3
// reference and emulator: one table lookup per fp16/bf16 element instead of a per-element dtype
// dispatch, so nightly-size KV caches convert at memory speed. Every conversion is exact.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace opgate::ref::incre_flash_attention_v3 {

// dst[i] = value of element (first + i) of a contiguous buffer of dtype t, for i < count.
// t: f16, bf16, f32, f64, i8, u8, bool, i32, i64.
void to_double(DType t, const uint8_t* data, int64_t first, int64_t count, double* dst);
void to_float(DType t, const uint8_t* data, int64_t first, int64_t count, float* dst);

// The value of one fp16 / bf16 bit pattern (table lookup).
double half_value(uint16_t bits);
double bfloat_value(uint16_t bits);

}  // namespace opgate::ref::incre_flash_attention_v3
