// DType traits and the exact conversions between double and every device dtype (style-and-layout.md
// B3). Narrow floating formats are rounded once, directly from double, by integer arithmetic on the
// IEEE bit patterns, so the result never depends on the FPU rounding mode or a float detour.

#include "core/dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace opgate {
namespace {

// An IEEE 754 binary format with an implicit leading bit; f16, bf16 and f32 are all exactly
// representable in double, which is what lets one rounding routine serve all three.
struct BinaryFormat {
  int precision;  // significand bits including the implicit one
  int exp_bits;

  int mant_bits() const { return precision - 1; }
  int emax() const { return (1 << (exp_bits - 1)) - 1; }
  int bias() const { return emax(); }
  int emin() const { return 1 - emax(); }
  int width() const { return 1 + exp_bits + mant_bits(); }
};

constexpr BinaryFormat kF64Format{53, 11};
constexpr BinaryFormat kF32Format{24, 8};
constexpr BinaryFormat kF16Format{11, 5};
constexpr BinaryFormat kBF16Format{8, 8};

constexpr uint64_t kDoubleFracMask = (uint64_t{1} << 52) - 1;

// 2^k for k in [-1074, 1023], built from bits so it is exact without libm.
double exact_pow2(int k) {
  if (k >= -1022) return double_from_bits(static_cast<uint64_t>(k + 1023) << 52);
  return double_from_bits(uint64_t{1} << (k + 1074));
}

// floor(log2(a)) for finite a > 0, double subnormals included.
int floor_log2(double a) {
  const uint64_t b = double_bits(a);
  const int biased = static_cast<int>((b >> 52) & 0x7ff);
  if (biased != 0) return biased - 1023;
  const uint64_t frac = b & kDoubleFracMask;
  return (63 - __builtin_clzll(frac)) - 1074;
}

BinaryFormat format_of(DType t) {
  switch (t) {
    case DType::kF64: return kF64Format;
    case DType::kF32: return kF32Format;
    case DType::kF16: return kF16Format;
    case DType::kBF16: return kBF16Format;
    default: break;
  }
  OPGATE_CHECK(false, fmt::format("{} is not a floating dtype", dtype_name(t)));
}

// Rounds `v` once to format `f` with mode `r` and returns the raw bit pattern. The magnitude is
// written as m * 2^s with integer m; the quotient by the target's quantum 2^q_exp is rounded using
// the remainder, exactly as IEEE 754 rounding with unbounded exponent, then overflow is applied.
uint64_t encode_binary(double v, BinaryFormat f, Rounding r) {
  const uint64_t b = double_bits(v);
  const int mant_bits = f.mant_bits();
  const uint64_t sign_bit = (b >> 63) << (f.width() - 1);
  const uint64_t exp_mask = ((uint64_t{1} << f.exp_bits) - 1) << mant_bits;
  const int biased = static_cast<int>((b >> 52) & 0x7ff);
  const uint64_t frac = b & kDoubleFracMask;

  if (biased == 0x7ff) {
    if (frac == 0) return sign_bit | exp_mask;
    // NaN: top payload bits survive; setting the quiet bit also keeps the result a NaN when the
    // payload was only in the discarded low bits.
    const uint64_t payload = (frac >> (52 - mant_bits)) | (uint64_t{1} << (mant_bits - 1));
    return sign_bit | exp_mask | payload;
  }
  if (biased == 0 && frac == 0) return sign_bit;

  const uint64_t m = biased == 0 ? frac : (frac | (uint64_t{1} << 52));
  const int s = biased == 0 ? -1074 : biased - 1075;
  const int e = floor_log2(std::fabs(v));
  int q_exp = std::max(e, f.emin()) - mant_bits;
  // shift > 0 for every format narrower than double; beyond 63 the value is far below half a
  // quantum (m < 2^53), which every mode rounds to zero.
  const int shift = q_exp - s;
  uint64_t q = 0;
  if (shift < 64) {
    q = m >> shift;
    const uint64_t rem = m & ((uint64_t{1} << shift) - 1);
    const uint64_t half = uint64_t{1} << (shift - 1);
    switch (r) {
      case Rounding::kNearestEven:
        if (rem > half || (rem == half && (q & 1) != 0)) ++q;
        break;
      case Rounding::kHalfAway:
        if (rem >= half) ++q;
        break;
      case Rounding::kTowardZero:
        break;
    }
  }
  if (q == 0) return sign_bit;
  if (q == (uint64_t{1} << f.precision)) {  // rounded up into the next binade
    q >>= 1;
    ++q_exp;
  }
  const uint64_t implicit = uint64_t{1} << mant_bits;
  if (q < implicit) return sign_bit | q;  // subnormal: q_exp is emin - mant_bits here
  const int out_biased = q_exp + mant_bits + f.bias();
  if (out_biased > 2 * f.bias()) {
    // Overflow: IEEE gives inf for the to-nearest modes; truncation never exceeds max finite.
    return r == Rounding::kTowardZero ? (sign_bit | (exp_mask - 1)) : (sign_bit | exp_mask);
  }
  return sign_bit | (static_cast<uint64_t>(out_biased) << mant_bits) | (q - implicit);
}

double decode_binary(uint64_t bits, BinaryFormat f) {
  const int mant_bits = f.mant_bits();
  const uint64_t sign = (bits >> (f.width() - 1)) & 1;
  const uint64_t exp_field = (bits >> mant_bits) & ((uint64_t{1} << f.exp_bits) - 1);
  const uint64_t frac = bits & ((uint64_t{1} << mant_bits) - 1);
  const uint64_t max_exp_field = (uint64_t{1} << f.exp_bits) - 1;
  if (exp_field == max_exp_field) {
    // inf, or NaN with the payload moved to the top of the double's fraction.
    return double_from_bits((sign << 63) | (uint64_t{0x7ff} << 52) | (frac << (52 - mant_bits)));
  }
  if (exp_field == 0) {
    const double mag = static_cast<double>(frac) * exact_pow2(f.emin() - mant_bits);
    return sign != 0 ? -mag : mag;
  }
  const uint64_t dexp = exp_field - static_cast<uint64_t>(f.bias()) + 1023;
  return double_from_bits((sign << 63) | (dexp << 52) | (frac << (52 - mant_bits)));
}

// Rounds a finite double to an integer-valued double with mode `r`.
double round_integral(double v, Rounding r) {
  if (!std::isfinite(v)) return v;
  const double t = std::trunc(v);
  // Exact: v and trunc(v) agree in sign and all bits above the binary point.
  const double a = std::fabs(v - t);
  if (a == 0.0) return v;
  // |v| < 2^52 here, so t +- 1 is exact.
  const double away = t + (v < 0 ? -1.0 : 1.0);
  switch (r) {
    case Rounding::kTowardZero: return t;
    case Rounding::kHalfAway: return a >= 0.5 ? away : t;
    case Rounding::kNearestEven:
      if (a > 0.5) return away;
      if (a < 0.5) return t;
      return (static_cast<int64_t>(t) % 2 == 0) ? t : away;
  }
  return t;
}

int64_t saturate_signed(double rounded, int64_t lo, int64_t hi) {
  if (std::isnan(rounded)) return 0;
  // For i64 these bounds are +-2^63 as doubles, so every value strictly between them converts.
  if (rounded >= static_cast<double>(hi)) return hi;
  if (rounded <= static_cast<double>(lo)) return lo;
  return static_cast<int64_t>(rounded);
}

uint64_t saturate_u64(double rounded) {
  if (std::isnan(rounded) || rounded <= 0.0) return 0;
  if (rounded >= 18446744073709551616.0) return std::numeric_limits<uint64_t>::max();
  return static_cast<uint64_t>(rounded);
}

template <class T>
void store_as(void* dst, T v) {
  std::memcpy(dst, &v, sizeof v);
}

template <class T>
T load_as(const void* src) {
  T v;
  std::memcpy(&v, src, sizeof v);
  return v;
}

struct NamedDType {
  const char* name;
  DType dtype;
};

constexpr NamedDType kDTypeNames[] = {
    {"float64", DType::kF64}, {"float32", DType::kF32}, {"float16", DType::kF16},
    {"bfloat16", DType::kBF16}, {"int8", DType::kI8},   {"uint8", DType::kU8},
    {"int32", DType::kI32},   {"int64", DType::kI64},   {"uint64", DType::kU64},
    {"bool", DType::kBool},   {"f64", DType::kF64},     {"f32", DType::kF32},
    {"f16", DType::kF16},     {"bf16", DType::kBF16},   {"fp16", DType::kF16},
    {"fp32", DType::kF32},    {"i8", DType::kI8},       {"u8", DType::kU8},
    {"i32", DType::kI32},     {"i64", DType::kI64},     {"u64", DType::kU64},
};

}  // namespace

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF64: return 8;
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kI8: return 1;
    case DType::kU8: return 1;
    case DType::kI32: return 4;
    case DType::kI64: return 8;
    case DType::kU64: return 8;
    case DType::kBool: return 1;
  }
  OPGATE_CHECK(false, fmt::format("invalid DType value {}", static_cast<int>(t)));
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF64: return "float64";
    case DType::kF32: return "float32";
    case DType::kF16: return "float16";
    case DType::kBF16: return "bfloat16";
    case DType::kI8: return "int8";
    case DType::kU8: return "uint8";
    case DType::kI32: return "int32";
    case DType::kI64: return "int64";
    case DType::kU64: return "uint64";
    case DType::kBool: return "bool";
  }
  return "invalid";
}

Expected<DType> parse_dtype(std::string_view name) {
  for (const NamedDType& n : kDTypeNames) {
    if (name == n.name) return n.dtype;
  }
  return parse_error(fmt::format(
      "unknown dtype '{}' (expected float64, float32, float16, bfloat16, int8, uint8, int32, "
      "int64, uint64 or bool)",
      name));
}

bool is_floating(DType t) {
  return t == DType::kF64 || t == DType::kF32 || t == DType::kF16 || t == DType::kBF16;
}

bool is_integer(DType t) { return !is_floating(t); }

int mantissa_digits(DType t) { return is_floating(t) ? format_of(t).precision : 0; }

double epsilon(DType t) { return is_floating(t) ? exact_pow2(1 - mantissa_digits(t)) : 1.0; }

double ulp(DType t, double x) {
  if (is_integer(t)) return 1.0;
  if (std::isnan(x)) return x;
  const BinaryFormat f = format_of(t);
  const double a = std::min(std::fabs(x), max_finite(t));
  const double smallest_subnormal = exact_pow2(f.emin() - f.mant_bits());
  if (a == 0.0) return smallest_subnormal;
  return exact_pow2(std::max(floor_log2(a), f.emin()) - f.mant_bits());
}

double max_finite(DType t) {
  switch (t) {
    case DType::kF64: return std::numeric_limits<double>::max();
    case DType::kF32: return static_cast<double>(std::numeric_limits<float>::max());
    case DType::kF16: return 65504.0;
    case DType::kBF16: return bf16_to_double(0x7F7F);
    case DType::kI8: return 127.0;
    case DType::kU8: return 255.0;
    case DType::kI32: return 2147483647.0;
    case DType::kI64: return static_cast<double>(std::numeric_limits<int64_t>::max());
    case DType::kU64: return static_cast<double>(std::numeric_limits<uint64_t>::max());
    case DType::kBool: return 1.0;
  }
  return 0.0;
}

double round_to(DType t, double v, Rounding r) {
  switch (t) {
    case DType::kF64: return v;
    case DType::kF32: return static_cast<double>(f32_from_double(v, r));
    case DType::kF16: return f16_to_double(f16_from_double(v, r));
    case DType::kBF16: return bf16_to_double(bf16_from_double(v, r));
    default: break;
  }
  uint64_t buffer = 0;
  store_element(t, &buffer, v, r);
  return load_element(t, &buffer);
}

uint16_t f16_from_double(double v, Rounding r) {
  return static_cast<uint16_t>(encode_binary(v, kF16Format, r));
}

double f16_to_double(uint16_t bits) { return decode_binary(bits, kF16Format); }

uint16_t bf16_from_double(double v, Rounding r) {
  return static_cast<uint16_t>(encode_binary(v, kBF16Format, r));
}

double bf16_to_double(uint16_t bits) { return decode_binary(bits, kBF16Format); }

float f32_from_double(double v, Rounding r) {
  const auto bits = static_cast<uint32_t>(encode_binary(v, kF32Format, r));
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

void store_element(DType t, void* dst, double v, Rounding r) {
  switch (t) {
    case DType::kF64: store_as<double>(dst, v); return;
    case DType::kF32: store_as<float>(dst, f32_from_double(v, r)); return;
    case DType::kF16: store_as<uint16_t>(dst, f16_from_double(v, r)); return;
    case DType::kBF16: store_as<uint16_t>(dst, bf16_from_double(v, r)); return;
    case DType::kI8:
      store_as<int8_t>(dst, static_cast<int8_t>(saturate_signed(round_integral(v, r), -128, 127)));
      return;
    case DType::kU8:
      store_as<uint8_t>(dst, static_cast<uint8_t>(saturate_signed(round_integral(v, r), 0, 255)));
      return;
    case DType::kI32:
      store_as<int32_t>(dst, static_cast<int32_t>(saturate_signed(
                                 round_integral(v, r), std::numeric_limits<int32_t>::min(),
                                 std::numeric_limits<int32_t>::max())));
      return;
    case DType::kI64:
      store_as<int64_t>(dst, saturate_signed(round_integral(v, r),
                                             std::numeric_limits<int64_t>::min(),
                                             std::numeric_limits<int64_t>::max()));
      return;
    case DType::kU64: store_as<uint64_t>(dst, saturate_u64(round_integral(v, r))); return;
    case DType::kBool:
      // C++ semantics: any non-zero value, NaN included, is true.
      store_as<uint8_t>(dst, v != 0.0 ? 1 : 0);
      return;
  }
  OPGATE_CHECK(false, fmt::format("invalid DType value {}", static_cast<int>(t)));
}

double load_element(DType t, const void* src) {
  switch (t) {
    case DType::kF64: return load_as<double>(src);
    case DType::kF32: return static_cast<double>(load_as<float>(src));
    case DType::kF16: return f16_to_double(load_as<uint16_t>(src));
    case DType::kBF16: return bf16_to_double(load_as<uint16_t>(src));
    case DType::kI8: return load_as<int8_t>(src);
    case DType::kU8: return load_as<uint8_t>(src);
    case DType::kI32: return load_as<int32_t>(src);
    case DType::kI64: return static_cast<double>(load_as<int64_t>(src));
    case DType::kU64: return static_cast<double>(load_as<uint64_t>(src));
    case DType::kBool: return load_as<uint8_t>(src) != 0 ? 1.0 : 0.0;
  }
  OPGATE_CHECK(false, fmt::format("invalid DType value {}", static_cast<int>(t)));
}

uint64_t load_bits(DType t, const void* src) {
  switch (dtype_size(t)) {
    case 1: return load_as<uint8_t>(src);
    case 2: return load_as<uint16_t>(src);
    case 4: return load_as<uint32_t>(src);
    default: return load_as<uint64_t>(src);
  }
}

void store_bits(DType t, void* dst, uint64_t bits) {
  switch (dtype_size(t)) {
    case 1: store_as<uint8_t>(dst, static_cast<uint8_t>(bits)); return;
    case 2: store_as<uint16_t>(dst, static_cast<uint16_t>(bits)); return;
    case 4: store_as<uint32_t>(dst, static_cast<uint32_t>(bits)); return;
    default: store_as<uint64_t>(dst, bits); return;
  }
}

}  // namespace opgate
