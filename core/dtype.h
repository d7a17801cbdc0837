// Element types of aclnn tensors and exact conversions between them and double.
// f16/bf16 are handled as raw 16-bit patterns; every conversion from double rounds once,
// directly to the target format (never through float), with the rounding mode the kernel uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/status.h"

namespace opgate {

enum class DType : uint8_t { kF64, kF32, kF16, kBF16, kI8, kU8, kI32, kI64, kU64, kBool };

// kNearestEven: IEEE default and the kernels' CAST_RINT. kHalfAway: CAST_ROUND (ties away from 0).
// kTowardZero: CAST_TRUNC. Integer targets saturate to their range and map NaN to 0.
enum class Rounding : uint8_t { kNearestEven, kHalfAway, kTowardZero };

// All dtypes, in enum order, for tests and listings.
inline constexpr DType kAllDTypes[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI8,
                                       DType::kU8,  DType::kI32, DType::kI64, DType::kU64,  DType::kBool};

size_t dtype_size(DType t);
// NumPy-style name used in JSON and manifests: float64 float32 float16 bfloat16 int8 uint8 int32
// int64 uint64 bool.
const char* dtype_name(DType t);
// Accepts the names above plus the short forms f64 f32 f16 bf16 fp16 fp32 i8 u8 i32 i64 u64.
Expected<DType> parse_dtype(std::string_view name);
bool is_floating(DType t);
bool is_integer(DType t);  // every non-floating type, bool included
// Significand digits including the implicit bit: 53, 24, 11, 8; 0 for integer types.
int mantissa_digits(DType t);
// Machine epsilon 2^(1-digits); 1 for integer types.
double epsilon(DType t);
// Spacing of the dtype's representable numbers at |x| (subnormal spacing below the normal range);
// 1 for integer types.
double ulp(DType t, double x);
// Largest finite value of the dtype.
double max_finite(DType t);

// Rounds `v` to a value representable in `t` (saturating for integers), returned as double.
double round_to(DType t, double v, Rounding r = Rounding::kNearestEven);

// Bit-level conversions. double -> f16/bf16 overflow to +-inf as IEEE does (finite overflow
// under kTowardZero gives max finite); NaN keeps its sign and the top payload bits, quiet.
uint16_t f16_from_double(double v, Rounding r = Rounding::kNearestEven);
double f16_to_double(uint16_t bits);
uint16_t bf16_from_double(double v, Rounding r = Rounding::kNearestEven);
double bf16_to_double(uint16_t bits);
float f32_from_double(double v, Rounding r = Rounding::kNearestEven);

// A double's IEEE 754 bit pattern, and the double of a pattern (by memcpy: no aliasing UB).
inline uint64_t double_bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
inline double double_from_bits(uint64_t b) {
  double v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

// Writes `v` into the element at `dst` in dtype `t`, rounding with `r`.
void store_element(DType t, void* dst, double v, Rounding r = Rounding::kNearestEven);
// Reads the element at `src` as double (exact for every dtype except i64/u64 beyond 2^53).
double load_element(DType t, const void* src);
// Raw bits of one element, zero-extended (for bit-exact comparison and u64 payloads).
uint64_t load_bits(DType t, const void* src);
void store_bits(DType t, void* dst, uint64_t bits);

}  // namespace opgate
