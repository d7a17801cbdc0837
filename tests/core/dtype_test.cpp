// Unit tests of core/dtype: hand-derived conversions for every rounding mode, exhaustive 16-bit
// round trips, and a randomized comparison against slow, independent neighbour-based rounding.

#include "core/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

namespace opgate {
namespace {

constexpr Rounding kRne = Rounding::kNearestEven;
constexpr Rounding kAway = Rounding::kHalfAway;
constexpr Rounding kTrunc = Rounding::kTowardZero;
constexpr Rounding kAllModes[] = {kRne, kAway, kTrunc};

uint32_t f32_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

TEST(DTypeTraits, sizes_names_and_parsing) {
  EXPECT_EQ(dtype_size(DType::kF64), 8u);
  EXPECT_EQ(dtype_size(DType::kF32), 4u);
  EXPECT_EQ(dtype_size(DType::kF16), 2u);
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kI8), 1u);
  EXPECT_EQ(dtype_size(DType::kU8), 1u);
  EXPECT_EQ(dtype_size(DType::kI32), 4u);
  EXPECT_EQ(dtype_size(DType::kI64), 8u);
  EXPECT_EQ(dtype_size(DType::kU64), 8u);
  EXPECT_EQ(dtype_size(DType::kBool), 1u);
  EXPECT_STREQ(dtype_name(DType::kBF16), "bfloat16");
  for (DType t : kAllDTypes) {
    Expected<DType> parsed = parse_dtype(dtype_name(t));
    ASSERT_TRUE(parsed.has_value()) << dtype_name(t);
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_EQ(*parse_dtype("fp16"), DType::kF16);
  EXPECT_EQ(*parse_dtype("bf16"), DType::kBF16);
  EXPECT_EQ(*parse_dtype("fp32"), DType::kF32);
  EXPECT_EQ(*parse_dtype("u64"), DType::kU64);
  Expected<DType> bad = parse_dtype("float128");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.status().code(), StatusCode::kParseError);
  EXPECT_NE(bad.status().message().find("'float128'"), std::string::npos);
}

TEST(DTypeTraits, floating_properties) {
  EXPECT_TRUE(is_floating(DType::kBF16));
  EXPECT_FALSE(is_floating(DType::kBool));
  EXPECT_TRUE(is_integer(DType::kBool));
  EXPECT_TRUE(is_integer(DType::kU64));
  EXPECT_EQ(mantissa_digits(DType::kF64), 53);
  EXPECT_EQ(mantissa_digits(DType::kF32), 24);
  EXPECT_EQ(mantissa_digits(DType::kF16), 11);
  EXPECT_EQ(mantissa_digits(DType::kBF16), 8);
  EXPECT_EQ(mantissa_digits(DType::kI32), 0);
  EXPECT_EQ(epsilon(DType::kF16), 0x1p-10);
  EXPECT_EQ(epsilon(DType::kBF16), 0x1p-7);
  EXPECT_EQ(epsilon(DType::kF32), 0x1p-23);
  EXPECT_EQ(epsilon(DType::kF64), 0x1p-52);
  EXPECT_EQ(epsilon(DType::kI8), 1.0);
  // f16 max: (2 - 2^-10) * 2^15 = 65504. bf16 max: (2 - 2^-7) * 2^127.
  EXPECT_EQ(max_finite(DType::kF16), 65504.0);
  EXPECT_EQ(max_finite(DType::kBF16), (2.0 - 0x1p-7) * 0x1p127);
  EXPECT_EQ(max_finite(DType::kF32), static_cast<double>(std::numeric_limits<float>::max()));
  EXPECT_EQ(max_finite(DType::kF64), std::numeric_limits<double>::max());
  EXPECT_EQ(max_finite(DType::kI8), 127.0);
  EXPECT_EQ(max_finite(DType::kU8), 255.0);
  EXPECT_EQ(max_finite(DType::kI32), 2147483647.0);
  EXPECT_EQ(max_finite(DType::kBool), 1.0);
}

TEST(DTypeTraits, ulp_spacing) {
  // f16 has 10 fraction bits: spacing in [1, 2) is 2^-10, in [2, 4) 2^-9, in [2048, 4096) 2.
  EXPECT_EQ(ulp(DType::kF16, 1.0), 0x1p-10);
  EXPECT_EQ(ulp(DType::kF16, 1.999), 0x1p-10);
  EXPECT_EQ(ulp(DType::kF16, -3.0), 0x1p-9);
  EXPECT_EQ(ulp(DType::kF16, 2048.0), 2.0);
  // Below 2^-14 (and at it) the spacing is the subnormal step 2^-24.
  EXPECT_EQ(ulp(DType::kF16, 0.0), 0x1p-24);
  EXPECT_EQ(ulp(DType::kF16, 1e-7), 0x1p-24);
  EXPECT_EQ(ulp(DType::kF16, 0x1p-14), 0x1p-24);
  // At and beyond max finite 65504 in [32768, 65536): 2^15 * 2^-10 = 32.
  EXPECT_EQ(ulp(DType::kF16, 65504.0), 32.0);
  EXPECT_EQ(ulp(DType::kF16, 1e9), 32.0);
  EXPECT_EQ(ulp(DType::kF16, -std::numeric_limits<double>::infinity()), 32.0);
  EXPECT_TRUE(std::isnan(ulp(DType::kF16, std::nan(""))));
  EXPECT_EQ(ulp(DType::kBF16, 1.0), 0x1p-7);
  EXPECT_EQ(ulp(DType::kBF16, 0.0), 0x1p-133);  // 2^-126 * 2^-7
  EXPECT_EQ(ulp(DType::kF32, 1.0), 0x1p-23);
  EXPECT_EQ(ulp(DType::kF32, 0.0), 0x1p-149);
  EXPECT_EQ(ulp(DType::kF64, 1.0), 0x1p-52);
  EXPECT_EQ(ulp(DType::kF64, 0.0), std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(ulp(DType::kF64, 1e-310), std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(ulp(DType::kI8, 100.0), 1.0);
  EXPECT_EQ(ulp(DType::kBool, 0.0), 1.0);
}

TEST(F16Convert, decodes_hand_values) {
  EXPECT_EQ(f16_to_double(0x3C00), 1.0);
  EXPECT_EQ(f16_to_double(0xC000), -2.0);
  // 0x3555: exponent 13 - 15 = -2, fraction 0x155 = 341: (1 + 341/1024) / 4.
  EXPECT_EQ(f16_to_double(0x3555), (1.0 + 341.0 / 1024.0) / 4.0);
  EXPECT_EQ(f16_to_double(0x7BFF), 65504.0);
  EXPECT_EQ(f16_to_double(0x0400), 0x1p-14);
  EXPECT_EQ(f16_to_double(0x03FF), 1023.0 * 0x1p-24);
  EXPECT_EQ(f16_to_double(0x0001), 0x1p-24);
  EXPECT_EQ(f16_to_double(0x7C00), std::numeric_limits<double>::infinity());
  EXPECT_EQ(f16_to_double(0xFC00), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::signbit(f16_to_double(0x8000)));
  EXPECT_EQ(f16_to_double(0x8000), 0.0);
  EXPECT_TRUE(std::isnan(f16_to_double(0x7E00)));
  EXPECT_TRUE(std::signbit(f16_to_double(0xFE00)));
}

TEST(F16Convert, ties_in_the_normal_range) {
  // 1 + 2^-11 is halfway between 1 (0x3C00, even) and 1 + 2^-10 (0x3C01, odd).
  EXPECT_EQ(f16_from_double(1.0 + 0x1p-11, kRne), 0x3C00);
  EXPECT_EQ(f16_from_double(1.0 + 0x1p-11, kAway), 0x3C01);
  EXPECT_EQ(f16_from_double(1.0 + 0x1p-11, kTrunc), 0x3C00);
  // 1 + 3 * 2^-11 is halfway between 0x3C01 (odd) and 0x3C02 (even).
  EXPECT_EQ(f16_from_double(1.0 + 3 * 0x1p-11, kRne), 0x3C02);
  EXPECT_EQ(f16_from_double(1.0 + 3 * 0x1p-11, kAway), 0x3C02);
  EXPECT_EQ(f16_from_double(1.0 + 3 * 0x1p-11, kTrunc), 0x3C01);
  // Negative ties mirror the positive ones (sign bit 0x8000).
  EXPECT_EQ(f16_from_double(-(1.0 + 0x1p-11), kRne), 0xBC00);
  EXPECT_EQ(f16_from_double(-(1.0 + 0x1p-11), kAway), 0xBC01);
  EXPECT_EQ(f16_from_double(-(1.0 + 0x1p-11), kTrunc), 0xBC00);
  // Just above the tie every to-nearest mode goes up; truncation still goes down.
  EXPECT_EQ(f16_from_double(1.0 + 0x1p-11 + 0x1p-30, kRne), 0x3C01);
  EXPECT_EQ(f16_from_double(1.0 + 0x1p-11 + 0x1p-30, kTrunc), 0x3C00);
  // 1/3 = 0.0101..b: 1.0101..b * 2^-2, fraction bits 0101010101|0101.. below half -> 0x3555.
  EXPECT_EQ(f16_from_double(1.0 / 3.0, kRne), 0x3555);
}

TEST(F16Convert, rounds_once_directly_from_double) {
  // v = 1 + 2^-11 + 2^-40. Through float, the 2^-40 is lost (float ulp at 1 is 2^-23), leaving the
  // exact tie 1 + 2^-11, which RNE sends to 1.0. Rounded once, v is above the tie: 1 + 2^-10.
  EXPECT_EQ(f16_from_double(1.0 + 0x1p-11 + 0x1p-40, kRne), 0x3C01);
  // Same for the away-mode tie the other way: v = 1 + 2^-11 - 2^-40 is below the tie -> 1.0,
  // while float would round it up to the tie and half-away would give 0x3C01.
  EXPECT_EQ(f16_from_double(1.0 + 0x1p-11 - 0x1p-40, kAway), 0x3C00);
}

TEST(F16Convert, overflow_and_infinities) {
  // Max finite 65504 = 0x7BFF; the next step would be 65536, so the midpoint is 65520.
  EXPECT_EQ(f16_from_double(65504.0), 0x7BFF);
  EXPECT_EQ(f16_from_double(65519.99, kRne), 0x7BFF);
  EXPECT_EQ(f16_from_double(65519.99, kAway), 0x7BFF);
  // 65520 ties between 0x7BFF (odd fraction 0x3FF) and 65536 (even): RNE picks 65536 -> inf.
  EXPECT_EQ(f16_from_double(65520.0, kRne), 0x7C00);
  EXPECT_EQ(f16_from_double(65520.0, kAway), 0x7C00);
  EXPECT_EQ(f16_from_double(65520.0, kTrunc), 0x7BFF);
  EXPECT_EQ(f16_from_double(1e6, kRne), 0x7C00);
  EXPECT_EQ(f16_from_double(1e6, kTrunc), 0x7BFF);
  EXPECT_EQ(f16_from_double(-1e6, kRne), 0xFC00);
  EXPECT_EQ(f16_from_double(-1e6, kTrunc), 0xFBFF);
  EXPECT_EQ(f16_from_double(1e300, kTrunc), 0x7BFF);
  // Infinity is exact, so truncation keeps it.
  const double inf = std::numeric_limits<double>::infinity();
  for (Rounding r : kAllModes) {
    EXPECT_EQ(f16_from_double(inf, r), 0x7C00);
    EXPECT_EQ(f16_from_double(-inf, r), 0xFC00);
  }
}

TEST(F16Convert, subnormals_and_signed_zero) {
  // Smallest subnormal 2^-24 = 0x0001; 2^-25 is exactly half of it: a tie between 0 (even) and
  // 0x0001 (odd).
  EXPECT_EQ(f16_from_double(0x1p-24), 0x0001);
  EXPECT_EQ(f16_from_double(0x1p-25, kRne), 0x0000);
  EXPECT_EQ(f16_from_double(0x1p-25, kAway), 0x0001);
  EXPECT_EQ(f16_from_double(0x1p-25, kTrunc), 0x0000);
  EXPECT_EQ(f16_from_double(-0x1p-25, kRne), 0x8000);
  EXPECT_EQ(f16_from_double(-0x1p-25, kAway), 0x8001);
  // 3 * 2^-26 = 0.75 * 2^-24 is above the midpoint -> 2^-24, except under truncation.
  EXPECT_EQ(f16_from_double(3 * 0x1p-26, kRne), 0x0001);
  EXPECT_EQ(f16_from_double(3 * 0x1p-26, kAway), 0x0001);
  EXPECT_EQ(f16_from_double(3 * 0x1p-26, kTrunc), 0x0000);
  // 2^-26 is a quarter step: zero in every mode, keeping the sign.
  for (Rounding r : kAllModes) {
    EXPECT_EQ(f16_from_double(0x1p-26, r), 0x0000);
    EXPECT_EQ(f16_from_double(-0x1p-26, r), 0x8000);
    EXPECT_EQ(f16_from_double(std::numeric_limits<double>::denorm_min(), r), 0x0000);
  }
  // 3 * 2^-25 = 1.5 steps: tie between 0x0001 (odd) and 0x0002 (even).
  EXPECT_EQ(f16_from_double(3 * 0x1p-25, kRne), 0x0002);
  EXPECT_EQ(f16_from_double(3 * 0x1p-25, kTrunc), 0x0001);
  // 1023.5 * 2^-24 ties between the largest subnormal 0x03FF and the smallest normal 0x0400.
  EXPECT_EQ(f16_from_double(1023.5 * 0x1p-24, kRne), 0x0400);
  EXPECT_EQ(f16_from_double(1023.5 * 0x1p-24, kTrunc), 0x03FF);
  EXPECT_EQ(f16_from_double(0.0), 0x0000);
  EXPECT_EQ(f16_from_double(-0.0), 0x8000);
}

TEST(F16Convert, nan_is_quiet_and_keeps_sign_and_payload) {
  EXPECT_EQ(f16_from_double(std::numeric_limits<double>::quiet_NaN()), 0x7E00);
  EXPECT_EQ(f16_from_double(-std::numeric_limits<double>::quiet_NaN()), 0xFE00);
  // Double fraction 0x8_0000_0000_0000 | 0x155 << 42: its top 10 bits are 0x200 | 0x155 = 0x355.
  EXPECT_EQ(f16_from_double(double_from_bits(0x7FF8000000000000ull | (0x155ull << 42))), 0x7F55);
  // A signalling NaN whose payload sits only in the dropped low bits becomes the quiet NaN.
  EXPECT_EQ(f16_from_double(double_from_bits(0x7FF0000000000001ull)), 0x7E00);
  EXPECT_EQ(f16_from_double(double_from_bits(0xFFF0000000000001ull), kTrunc), 0xFE00);
}

TEST(BF16Convert, hand_values) {
  EXPECT_EQ(bf16_from_double(1.0), 0x3F80);
  EXPECT_EQ(bf16_to_double(0x3F81), 1.0 + 0x1p-7);
  EXPECT_EQ(bf16_to_double(0xC0A0), -5.0);  // exponent 129 - 127 = 2, fraction 0x20/128 = 0.25
  // 1 + 2^-8 is halfway between 1.0 (0x3F80) and 1 + 2^-7 (0x3F81).
  EXPECT_EQ(bf16_from_double(1.0 + 0x1p-8, kRne), 0x3F80);
  EXPECT_EQ(bf16_from_double(1.0 + 0x1p-8, kAway), 0x3F81);
  EXPECT_EQ(bf16_from_double(1.0 + 0x1p-8, kTrunc), 0x3F80);
  EXPECT_EQ(bf16_from_double(-(1.0 + 0x1p-8), kRne), 0xBF80);
  EXPECT_EQ(bf16_from_double(-(1.0 + 0x1p-8), kAway), 0xBF81);
  // 1 + 3 * 2^-8 ties between 0x3F81 (odd) and 0x3F82 (even).
  EXPECT_EQ(bf16_from_double(1.0 + 3 * 0x1p-8, kRne), 0x3F82);
  // Through float, 1 + 2^-8 + 2^-30 would lose 2^-30 (float ulp 2^-23) and tie down to 1.0.
  EXPECT_EQ(bf16_from_double(1.0 + 0x1p-8 + 0x1p-30, kRne), 0x3F81);
}

TEST(BF16Convert, range_edges) {
  // Max (2 - 2^-7) * 2^127 = 0x7F7F; the midpoint to 2^128 is (2 - 2^-8) * 2^127, a tie to even
  // 2^128, i.e. inf. float's max (2 - 2^-23) * 2^127 is beyond it.
  const double max = (2.0 - 0x1p-7) * 0x1p127;
  EXPECT_EQ(bf16_from_double(max), 0x7F7F);
  EXPECT_EQ(bf16_from_double((2.0 - 0x1p-8) * 0x1p127, kRne), 0x7F80);
  EXPECT_EQ(bf16_from_double((2.0 - 0x1p-8) * 0x1p127, kTrunc), 0x7F7F);
  EXPECT_EQ(bf16_from_double(std::numeric_limits<float>::max(), kRne), 0x7F80);
  EXPECT_EQ(bf16_from_double(-1e39, kTrunc), 0xFF7F);
  // Subnormals: smallest 2^-126 * 2^-7 = 2^-133; 2^-134 is half of it.
  EXPECT_EQ(bf16_from_double(0x1p-133), 0x0001);
  EXPECT_EQ(bf16_from_double(0x1p-134, kRne), 0x0000);
  EXPECT_EQ(bf16_from_double(0x1p-134, kAway), 0x0001);
  EXPECT_EQ(bf16_from_double(-0x1p-134, kRne), 0x8000);
  EXPECT_EQ(bf16_from_double(3 * 0x1p-135, kRne), 0x0001);
  EXPECT_EQ(bf16_from_double(0x1p-126), 0x0080);
  EXPECT_EQ(bf16_from_double(-0.0), 0x8000);
  EXPECT_EQ(bf16_from_double(std::numeric_limits<double>::quiet_NaN()), 0x7FC0);
  EXPECT_EQ(bf16_from_double(-std::numeric_limits<double>::quiet_NaN()), 0xFFC0);
}

TEST(F32Convert, hand_values) {
  // 1 + 2^-24 ties between 1.0f and 1 + 2^-23.
  EXPECT_EQ(f32_from_double(1.0 + 0x1p-24, kRne), 1.0f);
  EXPECT_EQ(f32_from_double(1.0 + 0x1p-24, kAway), 1.0f + 0x1p-23f);
  EXPECT_EQ(f32_from_double(1.0 + 0x1p-24, kTrunc), 1.0f);
  EXPECT_EQ(f32_from_double(-(1.0 + 0x1p-24), kAway), -(1.0f + 0x1p-23f));
  // Overflow midpoint (2 - 2^-24) * 2^127.
  const float max = std::numeric_limits<float>::max();
  EXPECT_EQ(f32_from_double((2.0 - 0x1p-24) * 0x1p127, kRne), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f32_from_double((2.0 - 0x1p-24) * 0x1p127, kTrunc), max);
  EXPECT_EQ(f32_from_double(1e300, kTrunc), max);
  EXPECT_EQ(f32_from_double(-1e300, kTrunc), -max);
  // Subnormals: 2^-149 smallest, 2^-150 half of it.
  EXPECT_EQ(f32_from_double(0x1p-150, kRne), 0.0f);
  EXPECT_EQ(f32_from_double(0x1p-150, kAway), 0x1p-149f);
  EXPECT_TRUE(std::signbit(f32_from_double(-0x1p-150, kRne)));
  EXPECT_EQ(f32_bits(f32_from_double(-std::numeric_limits<double>::quiet_NaN())), 0xFFC00000u);
}

TEST(IntegerConvert, round_then_saturate) {
  auto i8 = [](double v, Rounding r) { return round_to(DType::kI8, v, r); };
  EXPECT_EQ(i8(200.0, kRne), 127.0);
  EXPECT_EQ(i8(-200.7, kRne), -128.0);
  EXPECT_EQ(i8(2.5, kRne), 2.0);  // tie to even
  EXPECT_EQ(i8(2.5, kAway), 3.0);
  EXPECT_EQ(i8(2.5, kTrunc), 2.0);
  EXPECT_EQ(i8(3.5, kRne), 4.0);
  EXPECT_EQ(i8(-2.5, kRne), -2.0);
  EXPECT_EQ(i8(-2.5, kAway), -3.0);
  EXPECT_EQ(i8(-2.5, kTrunc), -2.0);
  EXPECT_EQ(i8(-2.7, kTrunc), -2.0);
  EXPECT_EQ(i8(2.4999, kAway), 2.0);
  EXPECT_EQ(i8(127.5, kRne), 127.0);  // rounds to 128, then saturates
  for (Rounding r : kAllModes) EXPECT_EQ(i8(std::nan(""), r), 0.0);
  EXPECT_EQ(i8(std::numeric_limits<double>::infinity(), kRne), 127.0);
  EXPECT_EQ(i8(-std::numeric_limits<double>::infinity(), kRne), -128.0);
  EXPECT_EQ(round_to(DType::kU8, -1.0), 0.0);
  EXPECT_EQ(round_to(DType::kU8, -0.4), 0.0);
  EXPECT_EQ(round_to(DType::kU8, 255.5, kRne), 255.0);
  EXPECT_EQ(round_to(DType::kU8, 254.5, kRne), 254.0);
  EXPECT_EQ(round_to(DType::kI32, 3e9), 2147483647.0);
  EXPECT_EQ(round_to(DType::kI32, -3e9), -2147483648.0);
  EXPECT_EQ(round_to(DType::kU64, -5.0), 0.0);
  EXPECT_EQ(round_to(DType::kF64, 0.1), 0.1);
}

TEST(IntegerConvert, wide_integers_store_exact_bits) {
  uint64_t slot = 0;
  store_element(DType::kI64, &slot, 1e19);
  EXPECT_EQ(load_bits(DType::kI64, &slot), 0x7FFFFFFFFFFFFFFFull);
  store_element(DType::kI64, &slot, -1e19);
  EXPECT_EQ(load_bits(DType::kI64, &slot), 0x8000000000000000ull);
  store_element(DType::kI64, &slot, -0x1p62);
  EXPECT_EQ(load_element(DType::kI64, &slot), -0x1p62);
  store_element(DType::kU64, &slot, 1e20);
  EXPECT_EQ(load_bits(DType::kU64, &slot), 0xFFFFFFFFFFFFFFFFull);
  store_element(DType::kU64, &slot, 0x1p63);
  EXPECT_EQ(load_bits(DType::kU64, &slot), 0x8000000000000000ull);
  // The largest double below 2^63 is 2^63 - 1024, which fits.
  store_element(DType::kI64, &slot, 0x1p63 - 1024.0);
  EXPECT_EQ(load_bits(DType::kI64, &slot), 0x7FFFFFFFFFFFFC00ull);
}

TEST(IntegerConvert, bool_is_nonzero_and_nan_is_true) {
  EXPECT_EQ(round_to(DType::kBool, 0.0), 0.0);
  EXPECT_EQ(round_to(DType::kBool, -0.0), 0.0);
  EXPECT_EQ(round_to(DType::kBool, 0.1), 1.0);
  EXPECT_EQ(round_to(DType::kBool, -7.0), 1.0);
  EXPECT_EQ(round_to(DType::kBool, std::nan("")), 1.0);
  uint8_t b = 2;  // any non-zero byte reads as true
  EXPECT_EQ(load_element(DType::kBool, &b), 1.0);
  EXPECT_EQ(load_bits(DType::kBool, &b), 2u);
}

TEST(ElementAccess, bits_are_zero_extended_and_truncated) {
  uint64_t slot = 0;
  store_element(DType::kI8, &slot, -1.0);
  EXPECT_EQ(load_bits(DType::kI8, &slot), 0xFFu);
  EXPECT_EQ(load_element(DType::kI8, &slot), -1.0);
  store_bits(DType::kF16, &slot, 0x12343C00);  // only the low 16 bits are written
  EXPECT_EQ(load_bits(DType::kF16, &slot), 0x3C00u);
  EXPECT_EQ(load_element(DType::kF16, &slot), 1.0);
  store_element(DType::kBF16, &slot, -2.0);
  EXPECT_EQ(load_bits(DType::kBF16, &slot), 0xC000u);
  store_element(DType::kF32, &slot, 1.0 + 0x1p-24, kAway);
  EXPECT_EQ(load_bits(DType::kF32, &slot), 0x3F800001u);
  store_element(DType::kF64, &slot, 0.1);
  EXPECT_EQ(load_element(DType::kF64, &slot), 0.1);
  EXPECT_EQ(round_to(DType::kF16, 1.0 + 0x1p-11), 1.0);
  EXPECT_EQ(round_to(DType::kBF16, 1.0 + 0x1p-8, kAway), 1.0 + 0x1p-7);
}

// Every 16-bit pattern is exactly a double, so decoding then encoding must give it back, in
// every mode (exact values are not rounded). NaNs must stay NaN; quiet ones keep their bits.
void expect_exhaustive_round_trip(double (*to_double)(uint16_t), uint16_t (*from_double)(double, Rounding),
                                  uint16_t quiet_bit) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const double d = to_double(bits);
    for (Rounding r : kAllModes) {
      const uint16_t back = from_double(d, r);
      if (std::isnan(d)) {
        ASSERT_TRUE(std::isnan(to_double(back))) << std::hex << b;
        ASSERT_EQ(back & 0x8000, bits & 0x8000) << std::hex << b;
        if ((bits & quiet_bit) != 0) {
          ASSERT_EQ(back, bits) << std::hex << b;
        }
      } else {
        ASSERT_EQ(back, bits) << std::hex << b;
      }
    }
  }
}

TEST(F16Convert, exhaustive_round_trip) {
  expect_exhaustive_round_trip(f16_to_double, f16_from_double, 0x0200);
}

TEST(BF16Convert, exhaustive_round_trip) {
  expect_exhaustive_round_trip(bf16_to_double, bf16_from_double, 0x0040);
}

TEST(F16Convert, positive_patterns_are_strictly_increasing) {
  // The slow reference below relies on this ordering to find neighbours by binary search.
  for (uint16_t b = 0; b < 0x7C00; ++b) ASSERT_LT(f16_to_double(b), f16_to_double(b + 1)) << b;
  for (uint16_t b = 0; b < 0x7F80; ++b) ASSERT_LT(bf16_to_double(b), bf16_to_double(b + 1)) << b;
}

// Independent formulation of rounding to a 16-bit format: find the two representable neighbours
// of |v| by binary search over the (monotone) positive patterns, then pick by distance. The
// pattern after max finite stands for 2^(emax+1), which overflows to inf.
uint16_t slow_round16(double v, Rounding r, double (*to_double)(uint16_t), uint16_t max_bits,
                      double next_binade) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  const uint16_t inf_bits = max_bits + 1;
  if (a >= next_binade) return sign | (r == kTrunc && !std::isinf(a) ? max_bits : inf_bits);
  uint16_t lo = 0;
  uint16_t hi = max_bits;
  while (lo < hi) {  // largest pattern with value <= a
    const auto mid = static_cast<uint16_t>((lo + hi + 1) / 2);
    if (to_double(mid) <= a) {
      lo = mid;
    } else {
      hi = static_cast<uint16_t>(mid - 1);
    }
  }
  const double lo_value = to_double(lo);
  if (lo_value == a || r == kTrunc) return sign | lo;
  const uint16_t up = lo + 1;
  const double up_value = lo == max_bits ? next_binade : to_double(up);
  const double below = a - lo_value;
  const double above = up_value - a;
  if (below < above) return sign | lo;
  if (above < below) return sign | up;
  if (r == kAway) return sign | up;
  return sign | ((lo & 1) == 0 ? lo : up);
}

// Random doubles concentrated where the 16-bit format is interesting (subnormals through
// overflow), with a third of them exact midpoints between neighbours to exercise ties.
double random_probe(std::mt19937_64& gen, double (*to_double)(uint16_t), uint16_t max_bits,
                    int min_exp, int max_exp) {
  const uint64_t pick = gen() % 3;
  const bool negative = (gen() & 1) != 0;
  double v;
  if (pick == 0) {
    const auto b = static_cast<uint16_t>(gen() % max_bits);
    v = (to_double(b) + to_double(static_cast<uint16_t>(b + 1))) / 2;  // exact: one more bit
  } else {
    const int exp = min_exp + static_cast<int>(gen() % static_cast<uint64_t>(max_exp - min_exp + 1));
    const uint64_t bits = (static_cast<uint64_t>(exp + 1023) << 52) | (gen() >> 12);
    v = double_from_bits(bits);
  }
  return negative ? -v : v;
}

TEST(F16Convert, matches_slow_neighbour_rounding_on_random_doubles) {
  std::mt19937_64 gen(20240611);
  for (int i = 0; i < 200000; ++i) {
    const double v = random_probe(gen, f16_to_double, 0x7BFF, -28, 17);
    for (Rounding r : kAllModes) {
      ASSERT_EQ(f16_from_double(v, r), slow_round16(v, r, f16_to_double, 0x7BFF, 65536.0))
          << std::hexfloat << v << " mode " << static_cast<int>(r);
    }
  }
}

TEST(BF16Convert, matches_slow_neighbour_rounding_on_random_doubles) {
  std::mt19937_64 gen(77);
  for (int i = 0; i < 200000; ++i) {
    const double v = random_probe(gen, bf16_to_double, 0x7F7F, -136, 128);
    for (Rounding r : kAllModes) {
      ASSERT_EQ(bf16_from_double(v, r), slow_round16(v, r, bf16_to_double, 0x7F7F, 0x1p128))
          << std::hexfloat << v << " mode " << static_cast<int>(r);
    }
  }
}

TEST(F32Convert, matches_hardware_rounding_on_random_doubles) {
  // The FPU's double -> float conversion (round to nearest even by default) is the independent
  // reference; the other modes pick between its result and the adjacent float.
  std::mt19937_64 gen(5);
  const float inf = std::numeric_limits<float>::infinity();
  for (int i = 0; i < 200000; ++i) {
    const int exp = -155 + static_cast<int>(gen() % 286);  // 2^-155 .. 2^130
    double v = double_from_bits((static_cast<uint64_t>(exp + 1023) << 52) | (gen() >> 12));
    if ((gen() & 3) == 0) v = static_cast<double>(static_cast<float>(v)) * (1.0 + 0x1p-24);  // near ties
    if ((gen() & 1) != 0) v = -v;
    const float nearest = static_cast<float>(v);
    ASSERT_EQ(f32_bits(f32_from_double(v, kRne)), f32_bits(nearest)) << std::hexfloat << v;
    float lo = nearest;
    float hi = nearest;
    if (static_cast<double>(nearest) < v) hi = std::nextafter(nearest, inf);
    if (static_cast<double>(nearest) > v) lo = std::nextafter(nearest, -inf);
    const float toward_zero = v < 0 ? hi : lo;
    const bool tie = lo != hi && !std::isinf(lo) && !std::isinf(hi) &&
                     v - static_cast<double>(lo) == static_cast<double>(hi) - v;
    const float away = tie ? (v < 0 ? lo : hi) : nearest;
    ASSERT_EQ(f32_bits(f32_from_double(v, kTrunc)), f32_bits(toward_zero)) << std::hexfloat << v;
    ASSERT_EQ(f32_bits(f32_from_double(v, kAway)), f32_bits(away)) << std::hexfloat << v;
  }
}

}  // namespace
}  // namespace opgate
