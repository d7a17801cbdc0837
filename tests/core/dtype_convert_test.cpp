// store_elements against Tensor::set, element by element and byte for byte: every dtype and rounding
// on the edge cases of each format (ties, subnormals, the overflow threshold, NaN payloads, signed
// zeros, integer saturation), every f16 and bf16 value with its neighbouring midpoints, and random
// doubles of every exponent.

#include "core/dtype_convert.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/tensor.h"

namespace opgate {
namespace {

// Adds v, its negation, and the doubles one step above and below each.
void add_with_neighbours(std::vector<double>& out, double v) {
  for (double s : {v, -v}) {
    out.push_back(s);
    if (std::isfinite(s)) {
      out.push_back(std::nextafter(s, INFINITY));
      out.push_back(std::nextafter(s, -INFINITY));
    }
  }
}

std::vector<double> edge_values() {
  std::vector<double> v;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (double x : {0.0, 0.5, 1.0, 1.5, 2.5, 3.5, 127.5, 128.5, 255.5, 256.5, 126.5, -128.5, 2147483647.5,
                   2147483648.0, 2147483646.5, 9.2233720368547758e18, 1.8446744073709552e19, 1e300,
                   std::numeric_limits<double>::max(), std::numeric_limits<double>::denorm_min(),
                   std::numeric_limits<double>::min(), 65504.0, 65520.0, 65519.99, 6.103515625e-05,
                   5.960464477539063e-08, 2.9802322387695312e-08, 1.1754943508222875e-38, 1.1754942106924411e-38,
                   1.401298464324817e-45, 7.006492321624085e-46, 3.4028234663852886e+38,
                   3.4028235677973366e+38, 3.3895313892515355e+38, 3.3961775292304602e+38}) {
    add_with_neighbours(v, x);
  }
  for (double x : {kInf, -kInf}) v.push_back(x);
  // NaNs: quiet, signalling with payload only in the low bits, payload in the top bits, both signs.
  for (uint64_t nan : {0x7FF8000000000000ull, 0x7FF0000000000001ull, 0x7FF4000000000000ull, 0x7FFFFFFFFFFFFFFFull,
                       0x7FF0000020000000ull, 0x7FF0100000000000ull}) {
    v.push_back(double_from_bits(nan));
    v.push_back(double_from_bits(nan | (uint64_t{1} << 63)));
  }
  return v;
}

// Every value of a 16-bit format and the exact midpoints to its successor (ties), one double step
// either side of each midpoint.
std::vector<double> all_16_bit_values_and_ties(DType t) {
  std::vector<double> v;
  Tensor one = Tensor::zeros(t, {2});
  for (uint32_t b = 0; b < 0x10000; ++b) {
    one.set_bits(0, b);
    one.set_bits(1, b + 1);
    const double a = one.get(0);
    v.push_back(a);
    const double next = one.get(1);
    if (std::isfinite(a) && std::isfinite(next) && (b & 0x7FFF) != 0x7FFF) {
      const double mid = a / 2 + next / 2;  // exact: both are far above the double subnormals
      v.push_back(mid);
      v.push_back(std::nextafter(mid, INFINITY));
      v.push_back(std::nextafter(mid, -INFINITY));
    }
  }
  return v;
}

std::vector<double> random_values() {
  std::mt19937_64 gen(20261201);
  std::vector<double> v;
  for (int i = 0; i < 20000; ++i) v.push_back(double_from_bits(gen()));  // any exponent, NaNs included
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int i = 0; i < 20000; ++i) v.push_back(normal(gen) * std::ldexp(1.0, static_cast<int>(gen() % 80) - 40));
  for (int i = 0; i < 5000; ++i) v.push_back(static_cast<double>(static_cast<int64_t>(gen() % 600) - 300));
  return v;
}

void expect_same_as_set(DType t, Rounding r, const std::vector<double>& values) {
  const int64_t n = static_cast<int64_t>(values.size());
  Tensor expected = Tensor::zeros(t, {n});
  for (int64_t i = 0; i < n; ++i) expected.set(i, values[static_cast<size_t>(i)], r);
  Tensor got = Tensor::zeros(t, {n});
  store_elements(t, values.data(), n, got.data(), r);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(got.bits(i), expected.bits(i))
        << dtype_name(t) << " rounding " << static_cast<int>(r) << " value " << values[static_cast<size_t>(i)]
        << " (double bits 0x" << std::hex << double_bits(values[static_cast<size_t>(i)]) << ")";
  }
}

TEST(StoreElements, edge_values_match_tensor_set_for_every_dtype_and_rounding) {
  const std::vector<double> values = edge_values();
  for (DType t : kAllDTypes) {
    for (Rounding r : {Rounding::kNearestEven, Rounding::kHalfAway, Rounding::kTowardZero}) {
      expect_same_as_set(t, r, values);
    }
  }
}

TEST(StoreElements, every_half_value_and_tie_matches_tensor_set) {
  for (DType source : {DType::kF16, DType::kBF16}) {
    const std::vector<double> values = all_16_bit_values_and_ties(source);
    ASSERT_GT(values.size(), 200000u);
    for (DType t : {DType::kF16, DType::kBF16, DType::kF32, DType::kI8, DType::kI32}) {
      expect_same_as_set(t, Rounding::kNearestEven, values);
    }
  }
}

TEST(StoreElements, random_doubles_match_tensor_set) {
  const std::vector<double> values = random_values();
  for (DType t : kAllDTypes) expect_same_as_set(t, Rounding::kNearestEven, values);
}

TEST(StoreElements, hand_checked_roundings) {
  // bf16 keeps 8 significant bits: 1 + 2^-8 is the tie between 1 and 1 + 2^-7 and goes to even (1);
  // 1 + 3 * 2^-8 goes up to 1 + 2^-6. f16: 65520 is the tie between 65504 and 2^16, even = inf.
  const double in[] = {1.0 + std::ldexp(1.0, -8), 1.0 + 3 * std::ldexp(1.0, -8), 65520.0, -2.5, 300.0};
  uint16_t bf16[5], f16[5];
  int8_t i8[5];
  store_elements(DType::kBF16, in, 5, bf16);
  store_elements(DType::kF16, in, 5, f16);
  store_elements(DType::kI8, in, 5, i8);
  EXPECT_EQ(bf16[0], 0x3F80);
  EXPECT_EQ(bf16[1], 0x3F82);
  EXPECT_EQ(f16[2], 0x7C00);
  EXPECT_EQ(f16[3], 0xC100);
  EXPECT_EQ(i8[3], -2);   // ties to even
  EXPECT_EQ(i8[4], 127);  // saturates
}

TEST(StoreElements, tensor_range_overload_writes_only_its_range) {
  Tensor t = Tensor::full(DType::kBF16, {6}, 9.0);
  const double in[] = {1.0, -2.0, 0.5};
  store_elements(t, 2, in, 3);
  EXPECT_EQ(t.get(1), 9.0);
  EXPECT_EQ(t.get(2), 1.0);
  EXPECT_EQ(t.get(3), -2.0);
  EXPECT_EQ(t.get(4), 0.5);
  EXPECT_EQ(t.get(5), 9.0);
}

}  // namespace
}  // namespace opgate
