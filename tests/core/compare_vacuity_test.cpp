// The vacuity check's row swap and its full comparison path: rows that differ in the reference but
// are equal at the device precision cannot tell a row permutation (vacuous), the swap uses the first
// two fully cared rows that differ in any column, and the full path judges with the magnitude and
// the care mask in their places.
#include <cmath>

#include <gtest/gtest.h>

#include "core/compare.h"
#include "tests/core/compare_testing.h"

namespace opgate {
namespace {

using namespace compare_testing;  // NOLINT(google-build-using-namespace): test helpers

OutputCheck exact_f16() {
  OutputCheck c;
  c.name = "out";
  c.kind = CheckKind::kExact;
  c.device_dtype = DType::kF16;
  return c;
}

// Rounded to f16 (spacing 2^-10 at 1, 2^-8 at 5), 1 + 2^-30 is 1 and 5 + 2^-30 is 5.
constexpr double kTiny = 0x1p-30;

TEST(VacuityRows, rows_equal_at_device_precision_are_the_same_rows) {
  // Rows differ in column 0 below f16's precision only: the device returns the same rows, so a
  // swap changes no value it can return and hides no defect (issue 22: subnormal fills made such
  // rows, e.g. products that all round to 0, and the case MISTRUSTED). Rows that differ on the
  // device are still swapped (rows_that_differ_at_device_precision_are_trusted, and the swap of
  // rows 0 and 1 below fails).
  const Tensor e = f64({2, 1}, {1, 1 + kTiny});
  const Tensor g = of(DType::kF16, {2, 1}, {1, 1});
  EXPECT_FALSE(vacuity_check(exact_f16(), e, g, Tensor(), Tensor()).has_value());
  const CompareResult original = compare_output(exact_f16(), e, g, Tensor(), Tensor());
  ASSERT_TRUE(original.passed);
  EXPECT_FALSE(vacuity_check(exact_f16(), e, g, Tensor(), Tensor(), &original).has_value());
  // A third row that differs on the device is the partner: swapping it with row 0 must fail.
  const Tensor e3 = f64({3, 1}, {1, 1 + kTiny, 2});
  const Tensor g3 = of(DType::kF16, {3, 1}, {1, 1, 2});
  EXPECT_FALSE(vacuity_check(exact_f16(), e3, g3, Tensor(), Tensor()).has_value());
}

TEST(VacuityRows, a_difference_in_a_later_column_is_found) {
  // Rows equal in column 0, different (in the reference only) in column 1.
  const Tensor e = f64({2, 2}, {1, 5, 1, 5 + kTiny});
  const Tensor g = of(DType::kF16, {2, 2}, {1, 5, 1, 5});
  // Equal at f16 (the device's rows): no swap can change the output (issue 22).
  EXPECT_FALSE(vacuity_check(exact_f16(), e, g, Tensor(), Tensor()).has_value());
  // Different at f16 in column 1: the swap of rows 0 and 1 is seen.
  EXPECT_FALSE(vacuity_check(exact_f16(), f64({2, 2}, {1, 5, 1, 6}), of(DType::kF16, {2, 2}, {1, 5, 1, 6}), Tensor(),
                             Tensor()).has_value());
}

TEST(VacuityRows, the_third_row_is_the_partner_when_the_second_is_identical) {
  // Rows 0 and 1 identical in the reference (no swap between them could matter), row 2 differs
  // in the reference only: the swap is rows 0 and 2.
  const Tensor e = f64({3, 1}, {1, 1, 1 + kTiny});
  const Tensor g = of(DType::kF16, {3, 1}, {1, 1, 1});
  // Row 2 equals rows 0 and 1 at f16: every row is the same on the device (issue 22).
  EXPECT_FALSE(vacuity_check(exact_f16(), e, g, Tensor(), Tensor()).has_value());
}

TEST(VacuityRows, only_fully_cared_rows_are_swapped) {
  // Row 0 is partly undefined, so the swap takes rows 1 and 2 (equal at f16): vacuous. Swapping
  // in anything of row 0 (7, 8) would be seen.
  const Tensor e = f64({3, 2}, {7, 8, 1, 5, 1, 5 + kTiny});
  const Tensor g = of(DType::kF16, {3, 2}, {7, 8, 1, 5, 1, 5});
  const Tensor care = of(DType::kU8, {3, 2}, {1, 0, 1, 1, 1, 1});
  // Rows 1 and 2 are equal at f16, so their swap changes nothing (issue 22).
  EXPECT_FALSE(vacuity_check(exact_f16(), e, g, Tensor(), care).has_value());
  // Row 1 fully undefined: rows 0 and 2 remain, and they differ at f16: trusted.
  const Tensor care2 = of(DType::kU8, {3, 2}, {1, 1, 0, 0, 1, 1});
  EXPECT_FALSE(vacuity_check(exact_f16(), e, g, Tensor(), care2).has_value());
}

TEST(VacuityRows, the_partner_is_compared_with_the_first_full_row) {
  // Row 0 partly undefined; rows 1 and 2 identical; row 3 differs from row 1 in the reference only.
  // The swap pairs the first full row (1) with the first full row that differs from it (3).
  const Tensor e = f64({4, 2}, {7, 8, 1, 5, 1, 5, 1, 5 + kTiny});
  const Tensor g = of(DType::kF16, {4, 2}, {7, 8, 1, 5, 1, 5, 1, 5});
  const Tensor care = of(DType::kU8, {4, 2}, {1, 0, 1, 1, 1, 1, 1, 1});
  // Rows 1 and 3 are equal at f16 (issue 22): no full row differs on the device from row 1.
  EXPECT_FALSE(vacuity_check(exact_f16(), e, g, Tensor(), care).has_value());
}

TEST(VacuityRows, rows_that_differ_at_device_precision_are_trusted) {
  const Tensor e = f64({2, 2}, {1, 5, 1, 6});
  const Tensor g = of(DType::kF16, {2, 2}, {1, 5, 1, 6});
  EXPECT_FALSE(vacuity_check(exact_f16(), e, g, Tensor(), Tensor()).has_value());
}

TEST(VacuityRows, rows_with_nan_in_the_same_places_are_identical) {
  // Two rows (NaN, 1): identical (NaN is the same value as NaN here), so no permutation can change
  // the output, and the element perturbation (NaN -> a number) is seen: trusted.
  const Tensor e = f64({2, 2}, {NAN, 1, NAN, 1});
  const Tensor g = of(DType::kF16, {2, 2}, {NAN, 1, NAN, 1});
  EXPECT_FALSE(vacuity_check(exact_f16(), e, g, Tensor(), Tensor()).has_value());
}

TEST(VacuityPerturbation, a_quantized_element_moves_max_steps_plus_one) {
  // int8, one step allowed: 5 is moved to 7 (two steps), which the check rejects: trusted.
  OutputCheck q;
  q.name = "out";
  q.kind = CheckKind::kQuantized;
  q.device_dtype = DType::kI8;
  q.max_steps = 1;
  const Tensor e = f64({2}, {5, -3});
  const Tensor g = of(DType::kI8, {2}, {5, -3});
  EXPECT_FALSE(vacuity_check(q, e, g, Tensor(), Tensor()).has_value());
  // At the top of the range the move goes down instead: 127 -> 125.
  EXPECT_FALSE(vacuity_check(q, f64({1}, {127}), of(DType::kI8, {1}, {127}), Tensor(), Tensor()).has_value());
}

TEST(VacuityPerturbation, a_float_element_moves_by_its_own_spacing) {
  // f16 at 60000 has spacing 32: an exact output there is perturbed to a neighbour 32 away (a
  // whole-number step of 1 would round back to 60000 and find nothing).
  EXPECT_FALSE(vacuity_check(exact_f16(), f64({1}, {60000}), of(DType::kF16, {1}, {60000}), Tensor(), Tensor())
                   .has_value());
}

TEST(VacuityPerturbation, an_element_that_overflows_the_dtype_is_perturbed_into_a_number) {
  // 70000 rounds to +inf in f16 (beyond 65520); a finite value there fails every check, so an
  // output whose largest element overflows is trusted, exact or one-rounding bound.
  const Tensor e = f64({2}, {1, 70000});
  const Tensor g = of(DType::kF16, {2}, {1, INFINITY});
  ASSERT_TRUE(compare_output(exact_f16(), e, g, Tensor(), Tensor()).passed);
  EXPECT_FALSE(vacuity_check(exact_f16(), e, g, Tensor(), Tensor()).has_value());
  OutputCheck b;
  b.name = "out";
  b.kind = CheckKind::kTolerance;
  b.device_dtype = DType::kF16;
  b.tol.standard = Standard::kBound;
  ASSERT_TRUE(compare_output(b, e, g, Tensor(), Tensor()).passed);
  EXPECT_FALSE(vacuity_check(b, e, g, Tensor(), Tensor()).has_value());
}

TEST(VacuityPerturbation, a_wide_allowance_is_left_in_one_move) {
  // f32 allclose atol 1 at e = 1: the move aims just past the allowance, 1 + 1 * (1 + 2^-20) =
  // 2 + 2^-20, an f32 value (spacing 2^-22 at 2), 1 + 2^-20 away: seen, trusted. (Aiming just
  // short, at 2 - 2^-20, would need 8 steps of 2^-23 only to reach 2.0, still within the allowance.)
  OutputCheck a;
  a.name = "out";
  a.kind = CheckKind::kTolerance;
  a.device_dtype = DType::kF32;
  a.tol.standard = Standard::kAllclose;
  a.tol.atol = 1;
  EXPECT_FALSE(vacuity_check(a, f64({1}, {1}), of(DType::kF32, {1}, {1}), Tensor(), Tensor()).has_value());
}

TEST(VacuityPerturbation, a_toward_zero_bound_is_left_past_its_rounded_interval) {
  // f16 bound rounding toward zero, u = 2^-10, e = -1 - 1.05u, acc = 0.15u: [e - acc, e + acc] =
  // [-1 - 1.2u, -1 - 0.9u] rounds toward zero to [lo, hi] = [-1 - u, -1], so -1 is right although
  // it is 1.05u from e, beyond allowed = acc + u/2 = 0.65u. The perturbation must leave [lo, hi]
  // (to -1 + u/2 or below -1 - u), so a correct output is trusted.
  OutputCheck b;
  b.name = "out";
  b.kind = CheckKind::kTolerance;
  b.device_dtype = DType::kF16;
  b.rounding = Rounding::kTowardZero;
  b.tol.standard = Standard::kBound;
  b.tol.c = 1;
  b.tol.u_acc = 1;
  const double u = 0x1p-10;
  const Tensor e = f64({1}, {-1 - 1.05 * u});
  const Tensor mag = f64({1}, {0.15 * u});
  EXPECT_TRUE(compare_output(b, e, of(DType::kF16, {1}, {-1.0}), mag, Tensor()).passed);
  const Tensor g = of(DType::kF16, {1}, {-1 - u});
  ASSERT_TRUE(compare_output(b, e, g, mag, Tensor()).passed);
  EXPECT_FALSE(vacuity_check(b, e, g, mag, Tensor()).has_value());
  const CompareResult original = compare_output(b, e, g, mag, Tensor());
  EXPECT_FALSE(vacuity_check(b, e, g, mag, Tensor(), &original).has_value());
}

TEST(VacuityPerturbation, the_move_goes_the_other_way_when_up_overflows) {
  // f16 allclose atol 40000 at e = 40000: up, 80000 is beyond the f16 range; down, about -0.04 is
  // 40000.04 from e and a finite f16 value: the check rejects it, trusted.
  OutputCheck a;
  a.name = "out";
  a.kind = CheckKind::kTolerance;
  a.device_dtype = DType::kF16;
  a.tol.standard = Standard::kAllclose;
  a.tol.atol = 40000;
  EXPECT_FALSE(vacuity_check(a, f64({1}, {40000}), of(DType::kF16, {1}, {40000}), Tensor(), Tensor()).has_value());
  // atol 110000: up 150000 and down -70000 are both beyond the f16 range (|x| >= 65520 rounds to
  // inf), so no f16 value is outside the allowance: vacuous.
  a.tol.atol = 110000;
  EXPECT_TRUE(vacuity_check(a, f64({1}, {40000}), of(DType::kF16, {1}, {40000}), Tensor(), Tensor()).has_value());
}

// A one-rounding bound (c = 1, u_acc = 1: acc = magnitude) in dtype t.
OutputCheck bound_acc_is_magnitude(DType t) {
  OutputCheck b;
  b.name = "out";
  b.kind = CheckKind::kTolerance;
  b.device_dtype = t;
  b.tol.standard = Standard::kBound;
  b.tol.c = 1;
  b.tol.u_acc = 1;
  return b;
}

// The output is the dtype's largest finite value M (or -M), within acc of the reference, and the
// interval's far end rounds past M to inf: the probe must still find the value below the
// interval's near end, and the output is trusted (with and without the original result).
void expect_trusted_at_the_top(DType t, double M, double acc, double accepted_below, double failing_below) {
  const OutputCheck b = bound_acc_is_magnitude(t);
  for (double sign : {1.0, -1.0}) {
    const Tensor e = f64({1}, {sign * M});
    const Tensor mag = f64({1}, {acc});
    auto passes = [&](double g) { return compare_output(b, e, of(t, {1}, {g}), mag, Tensor()).passed; };
    const Tensor g = of(t, {1}, {sign * M});
    ASSERT_TRUE(passes(sign * M)) << dtype_name(t) << " sign " << sign;
    EXPECT_TRUE(passes(sign * accepted_below)) << dtype_name(t) << " sign " << sign;
    EXPECT_FALSE(passes(sign * failing_below)) << dtype_name(t) << " sign " << sign;
    // M + acc reaches the overflow threshold M + half a spacing: a correct kernel may round to inf.
    EXPECT_TRUE(passes(sign * INFINITY)) << dtype_name(t) << " sign " << sign;
    EXPECT_FALSE(passes(-sign * INFINITY)) << dtype_name(t) << " sign " << sign;
    const auto why = vacuity_check(b, e, g, mag, Tensor());
    EXPECT_FALSE(why.has_value()) << dtype_name(t) << " sign " << sign << ": " << *why;
    const CompareResult original = compare_output(b, e, g, mag, Tensor());
    EXPECT_FALSE(vacuity_check(b, e, g, mag, Tensor(), &original).has_value()) << dtype_name(t) << " sign " << sign;
  }
}

TEST(VacuityTopOfRange, an_f16_interval_past_the_maximum_is_left_below) {
  // f16: M = 65504, spacing 32 below it. acc = 70: [M - 70, M + 70] = [65434, 65574] rounds to
  // [65440, inf] (65434 is 6 from 65440, 26 from 65408; 65574 >= 65520 overflows). 65408 fails.
  expect_trusted_at_the_top(DType::kF16, 65504, 70, 65440, 65408);
}

TEST(VacuityTopOfRange, a_bf16_interval_past_the_maximum_is_left_below) {
  // bf16: M = (2 - 2^-7) 2^127 = 2^128 - 2^120, spacing s = 2^120. acc = 1.25 s: M - 1.25 s is
  // 0.25 s from M - s and 0.75 s from M - 2 s, so the interval is [M - s, inf]; M - 2 s fails.
  const double s = 0x1p120;
  expect_trusted_at_the_top(DType::kBF16, 0x1p128 - s, 1.25 * s, 0x1p128 - 2 * s, 0x1p128 - 3 * s);
}

TEST(VacuityTopOfRange, an_f32_interval_past_the_maximum_is_left_below) {
  // f32: M = (2 - 2^-23) 2^127 = 2^128 - 2^104, spacing s = 2^104; acc = 1.25 s as for bf16.
  const double s = 0x1p104;
  expect_trusted_at_the_top(DType::kF32, 0x1p128 - s, 1.25 * s, 0x1p128 - 2 * s, 0x1p128 - 3 * s);
}

TEST(VacuityTopOfRange, inf_is_accepted_only_where_the_bound_reaches_the_overflow_threshold) {
  // f16 M = 65504 rounds to inf from M + 16 = 65520 on (the tie goes to the even 2^16 = inf).
  const OutputCheck b = bound_acc_is_magnitude(DType::kF16);
  auto passes = [&](double acc, double g) {
    return compare_output(b, f64({1}, {65504}), of(DType::kF16, {1}, {g}), f64({1}, {acc}), Tensor()).passed;
  };
  EXPECT_FALSE(passes(15.5, INFINITY));  // M + 15.5 still rounds to M
  EXPECT_TRUE(passes(16, INFINITY));
  EXPECT_TRUE(passes(15.5, 65504));
}

TEST(VacuityTopOfRange, an_exact_maximum_moves_to_a_representable_neighbour) {
  // f16 exact at M = 65504: up is inf, so the move goes to the neighbour below, 65472 (never to
  // 65536, which f16 cannot hold): trusted.
  const Tensor e = f64({1}, {65504});
  const Tensor g = of(DType::kF16, {1}, {65504});
  EXPECT_FALSE(vacuity_check(exact_f16(), e, g, Tensor(), Tensor()).has_value());
}

TEST(VacuityEmpty, an_empty_output_is_not_vacuous) {
  // An output of shape [0, 16] has one possible value (no elements): no wrong value exists for the
  // comparison to miss, so an empty call is not MISTRUSTED. A non-empty output with nothing
  // compared still is.
  const Tensor e = f64({0, 16}, {});
  const Tensor g = of(DType::kF16, {0, 16}, {});
  for (const OutputCheck& c : {exact_f16(), bound_acc_is_magnitude(DType::kF16)}) {
    const CompareResult original = compare_output(c, e, g, Tensor(), Tensor());
    ASSERT_TRUE(original.passed);
    EXPECT_EQ(original.metrics.elements, 0);
    EXPECT_FALSE(vacuity_check(c, e, g, Tensor(), Tensor()).has_value());
    EXPECT_FALSE(vacuity_check(c, e, g, Tensor(), Tensor(), &original).has_value());
  }
  // Nor is an output whose every element is declared undefined (issue 22: nothing there can be wrong).
  const Tensor none = of(DType::kU8, {2}, {0, 0});
  EXPECT_FALSE(vacuity_check(exact_f16(), f64({2}, {1, 2}), of(DType::kF16, {2}, {1, 2}), Tensor(), none).has_value());
}

TEST(VacuityFull, the_full_comparison_uses_the_magnitude_and_the_care_mask) {
  // A bound judged by a full comparison (no original result). Magnitude 0, so the allowance is half
  // an ulp; the perturbation of element 1 (e = 2) is seen: trusted. Were the magnitude taken as a
  // care mask (all 0), nothing would be compared and the perturbed copy would pass.
  OutputCheck b;
  b.name = "out";
  b.kind = CheckKind::kTolerance;
  b.device_dtype = DType::kF32;
  b.tol.standard = Standard::kBound;
  const Tensor e = f64({2}, {1, 2});
  const Tensor g = of(DType::kF32, {2}, {1, 2});
  EXPECT_FALSE(vacuity_check(b, e, g, f64({2}, {0, 0}), Tensor()).has_value());
  // And a care mask that excludes element 1: the perturbation goes to element 0, still seen.
  EXPECT_FALSE(vacuity_check(b, e, g, f64({2}, {0, 0}), of(DType::kU8, {2}, {1, 0})).has_value());
}

}  // namespace
}  // namespace opgate
