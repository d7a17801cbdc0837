// NaN and Inf under every check kind and standard: an expected NaN is matched by a NaN only, a
// number never by a NaN, an Inf only by the same Inf. Each output holds 2000 elements with one
// non-finite disagreement, so the standards that allow a share of bad elements (0.1 %, 1 %) would
// pass it if the disagreement were counted as an ordinary miss, and a comparator that lets NaN
// match a number passes it outright.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "core/compare.h"

namespace opgate {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kN = 2000;

OutputCheck check_of(const std::string& kind, DType t) {
  OutputCheck c;
  c.name = "out";
  c.device_dtype = t;
  if (kind == "exact") {
    c.kind = CheckKind::kExact;
  } else if (kind == "quantized") {
    c.kind = CheckKind::kQuantized;
    c.max_steps = 1;
  } else {
    c.kind = CheckKind::kTolerance;
    c.tol.standard = *parse_standard(kind);
    c.tol.rtol = 0.01;
    c.tol.atol = 0.01;
    c.tol.max_bad_fraction = 0.01;
  }
  return c;
}

// Expected 2000 x 1.0 except element 7 = `e`; got 2000 x 1.0 except element 7 = `g`.
bool passes(const std::string& kind, DType t, double e, double g) {
  std::vector<double> ev(kN, 1.0), gv(kN, 1.0);
  ev[7] = e;
  gv[7] = g;
  const Tensor mag = Tensor::full(DType::kF64, {kN}, 1.0);
  return compare_output(check_of(kind, t), Tensor::from_values(DType::kF64, {kN}, ev),
                        Tensor::from_values(t, {kN}, gv), mag, Tensor())
      .passed;
}

class NonFinite : public ::testing::TestWithParam<const char*> {};

TEST_P(NonFinite, expected_nan_never_matches_a_number) {
  const std::string kind = GetParam();
  for (double g : {0.0, 1.0, -1.0, 65504.0, kInf}) EXPECT_FALSE(passes(kind, DType::kF16, kNaN, g)) << kind << " got " << g;
  EXPECT_TRUE(passes(kind, DType::kF16, kNaN, kNaN)) << kind;
}

TEST_P(NonFinite, a_number_never_matches_nan) {
  const std::string kind = GetParam();
  for (double e : {0.0, 1.0, -3.5, 1e6}) EXPECT_FALSE(passes(kind, DType::kF16, e, kNaN)) << kind << " expected " << e;
}

TEST_P(NonFinite, inf_matches_the_same_inf_only) {
  const std::string kind = GetParam();
  EXPECT_TRUE(passes(kind, DType::kF32, kInf, kInf)) << kind;
  EXPECT_TRUE(passes(kind, DType::kF32, -kInf, -kInf)) << kind;
  EXPECT_FALSE(passes(kind, DType::kF32, kInf, -kInf)) << kind;
  EXPECT_FALSE(passes(kind, DType::kF32, kInf, 3.4028234663852886e38)) << kind;
  EXPECT_FALSE(passes(kind, DType::kF32, kInf, kNaN)) << kind;
  EXPECT_FALSE(passes(kind, DType::kF32, 1.0, kInf)) << kind;
}

INSTANTIATE_TEST_SUITE_P(EveryCheck, NonFinite,
                         ::testing::Values("exact", "bound", "ascend-mixed", "mere-mare", "dual-thousandth", "allclose"));

TEST(NonFiniteInteger, nan_and_inf_are_not_their_integer_conversions) {
  // An int8 output has no NaN or Inf: the cast's NaN -> 0 and saturation to 127 are numbers.
  for (const char* kind : {"exact", "quantized", "bound"}) {
    EXPECT_FALSE(passes(kind, DType::kI8, kNaN, 0)) << kind;
    EXPECT_FALSE(passes(kind, DType::kI8, kInf, 127)) << kind;
    EXPECT_FALSE(passes(kind, DType::kI8, -kInf, -128)) << kind;
    EXPECT_TRUE(passes(kind, DType::kI8, 1.0, 1)) << kind;
  }
}

TEST(NonFiniteQuantized, a_float_quantized_output_follows_the_same_rules) {
  EXPECT_FALSE(passes("quantized", DType::kF16, kNaN, 1.0));
  EXPECT_FALSE(passes("quantized", DType::kF16, 1.0, kNaN));
  EXPECT_TRUE(passes("quantized", DType::kF16, kNaN, kNaN));
  EXPECT_FALSE(passes("quantized", DType::kF16, kInf, 65504.0));
  EXPECT_TRUE(passes("quantized", DType::kF16, kInf, kInf));
}

TEST(NonFiniteOverflow, a_finite_reference_beyond_the_range_is_matched_by_its_rounded_inf_only) {
  // 70000 is beyond the f16 maximum 65504 (and beyond its rounding midpoint 65520), so the
  // correctly rounded value is +inf: under every check but the one-rounding bound (which has its
  // own interval rule) only +inf matches; the largest finite value and -inf do not.
  for (const char* kind : {"exact", "quantized", "ascend-mixed", "mere-mare", "dual-thousandth", "allclose"}) {
    EXPECT_TRUE(passes(kind, DType::kF16, 70000.0, kInf)) << kind;
    EXPECT_FALSE(passes(kind, DType::kF16, 70000.0, 65504.0)) << kind;
    EXPECT_FALSE(passes(kind, DType::kF16, -70000.0, -65504.0)) << kind;
    EXPECT_TRUE(passes(kind, DType::kF16, -70000.0, -kInf)) << kind;
    EXPECT_FALSE(passes(kind, DType::kF16, 70000.0, -kInf)) << kind;
  }
}

}  // namespace
}  // namespace opgate
