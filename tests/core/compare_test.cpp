// Comparator self-tests (benchdnn self/ style): every check kind, every standard's edge, the
// metrics by hand arithmetic, poison detection, and the vacuity check firing exactly when it should.
#include "core/compare.h"
#include "tests/core/compare_testing.h"

#include <cmath>

#include <gtest/gtest.h>

#include "core/guard.h"

namespace opgate {
namespace {

using namespace compare_testing;  // NOLINT(google-build-using-namespace): test helpers

bool passes(const OutputCheck& c, const Tensor& e, const Tensor& g, const Tensor& mag = Tensor(),
            const Tensor& care = Tensor()) {
  return compare_output(c, e, g, mag, care).passed;
}

TEST(CompareExact, equal_values_pass_and_one_ulp_fails) {
  const Tensor e = f64({3}, {1.0, -2.5, 1024.0});
  EXPECT_TRUE(passes(exact(DType::kF16), e, of(DType::kF16, {3}, {1.0, -2.5, 1024.0})));
  // 1024 + 1 ulp(f16 at 1024 = 1) = 1025.
  EXPECT_FALSE(passes(exact(DType::kF16), e, of(DType::kF16, {3}, {1.0, -2.5, 1025.0})));
}

TEST(CompareExact, nan_matches_nan_and_signed_zero_is_distinguished) {
  EXPECT_TRUE(passes(exact(DType::kF32), f64({1}, {NAN}), of(DType::kF32, {1}, {NAN})));
  EXPECT_FALSE(passes(exact(DType::kF32), f64({1}, {0.0}), of(DType::kF32, {1}, {-0.0})));
  EXPECT_FALSE(passes(exact(DType::kF32), f64({1}, {1.0}), of(DType::kF32, {1}, {NAN})));
}

TEST(CompareExact, expected_is_rounded_with_the_kernels_mode) {
  // 1 + 2^-11 is halfway between f16 neighbours 1 and 1 + 2^-10.
  const Tensor e = f64({1}, {1.0 + 0x1p-11});
  EXPECT_TRUE(passes(exact(DType::kF16), e, of(DType::kF16, {1}, {1.0})));
  EXPECT_FALSE(passes(exact(DType::kF16), e, of(DType::kF16, {1}, {1.0 + 0x1p-10})));
  EXPECT_TRUE(passes(exact(DType::kF16, Rounding::kHalfAway), e, of(DType::kF16, {1}, {1.0 + 0x1p-10})));
}

TEST(CompareExact, integer_outputs_compare_bits) {
  const Tensor e = of(DType::kI32, {4}, {0, -1, 7, 2147483647});
  EXPECT_TRUE(passes(exact(DType::kI32), e, of(DType::kI32, {4}, {0, -1, 7, 2147483647})));
  EXPECT_FALSE(passes(exact(DType::kI32), e, of(DType::kI32, {4}, {0, -1, 8, 2147483647})));
}

TEST(CompareExact, care_mask_excludes_undefined_elements) {
  const Tensor e = f64({2, 2}, {1, 2, 3, 4});
  const Tensor g = of(DType::kF32, {2, 2}, {1, 2, 99, 99});
  const Tensor care = of(DType::kU8, {2, 2}, {1, 1, 0, 0});
  EXPECT_FALSE(passes(exact(DType::kF32), e, g));
  const CompareResult r = compare_output(exact(DType::kF32), e, g, Tensor(), care);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.metrics.compared, 2);
}

TEST(CompareQuantized, allows_max_steps_from_the_rounded_expectation) {
  OutputCheck c = exact(DType::kI8);
  c.kind = CheckKind::kQuantized;
  c.max_steps = 1;
  const Tensor e = f64({1}, {5.4});  // rounds to 5
  EXPECT_TRUE(passes(c, e, of(DType::kI8, {1}, {6})));
  EXPECT_TRUE(passes(c, e, of(DType::kI8, {1}, {4})));
  EXPECT_FALSE(passes(c, e, of(DType::kI8, {1}, {7})));
}

TEST(CompareBound, element_bound_is_c_u_magnitude_plus_half_ulp) {
  OutputCheck c = tolerance(DType::kF32, Standard::kBound);
  c.tol.c = 2;
  c.tol.u_acc = 0x1p-24;
  // allowed = 2 * 2^-24 * 100 + 0.5 * 2^-23 (ulp of f32 at ~1) = 1.1921e-5 + 5.96e-8 = 1.1980e-5
  const Tensor e = f64({1}, {1.0});
  const Tensor mag = f64({1}, {100.0});
  EXPECT_TRUE(passes(c, e, of(DType::kF32, {1}, {1.0 + 1.19e-5}), mag));
  EXPECT_FALSE(passes(c, e, of(DType::kF32, {1}, {1.0 + 1.21e-5}), mag));
  // Without a magnitude only the final rounding is allowed: the correctly rounded value passes.
  EXPECT_TRUE(passes(c, f64({1}, {1.0 + 0x1p-25}), of(DType::kF32, {1}, {1.0})));
  EXPECT_FALSE(passes(c, f64({1}, {1.0}), of(DType::kF32, {1}, {1.0 + 0x1p-23})));
}

TEST(CompareAllclose, max_bad_fraction_allows_exactly_that_many) {
  OutputCheck c = tolerance(DType::kF32, Standard::kAllclose);
  c.tol.atol = 0.01;
  c.tol.max_bad_fraction = 0.1;  // 1 of 10
  const Tensor e = f64({10}, std::vector<double>(10, 1.0));
  std::vector<double> g(10, 1.0);
  g[3] = 2.0;
  EXPECT_TRUE(passes(c, e, of(DType::kF32, {10}, g)));
  g[4] = 2.0;
  EXPECT_FALSE(passes(c, e, of(DType::kF32, {10}, g)));
}

TEST(CompareAscendMixed, ratio_and_cap) {
  // fp16: element ok if |a-g| <= 2^-9 + 2^-9 |g|; pass iff >= 99 % ok and max abs <= max(0.1, 32 ulp).
  const OutputCheck c = tolerance(DType::kF16, Standard::kAscendMixed);
  const Tensor e = f64({100}, std::vector<double>(100, 1.0));
  std::vector<double> g(100, 1.0);
  g[0] = 1.05;  // bad element, but within the 0.1 cap
  EXPECT_TRUE(passes(c, e, of(DType::kF16, {100}, g)));
  g[1] = 1.05;  // two bad of 100: ratio 0.98 < 0.99
  EXPECT_FALSE(passes(c, e, of(DType::kF16, {100}, g)));
  g[1] = 1.0;
  g[0] = 1.5;  // one bad element beyond the cap
  EXPECT_FALSE(passes(c, e, of(DType::kF16, {100}, g)));
}

TEST(CompareMereMare, mean_and_max_relative_error_thresholds) {
  // fp32: T = 2^-13 = 1.22e-4; MARE must stay below 10 T = 1.22e-3 and MERE below T.
  const OutputCheck c = tolerance(DType::kF32, Standard::kMereMare);
  const Tensor e = f64({4}, {1, 1, 1, 1});
  EXPECT_TRUE(passes(c, e, of(DType::kF32, {4}, {1 + 1e-4, 1, 1, 1})));   // MERE 2.5e-5
  EXPECT_FALSE(passes(c, e, of(DType::kF32, {4}, {1 + 2e-3, 1, 1, 1})));  // MARE 2e-3
  EXPECT_FALSE(passes(c, e, of(DType::kF32, {4}, {1 + 3e-4, 1 + 3e-4, 1 + 3e-4, 1})));  // MERE 2.25e-4
}

TEST(CompareMereMare, max_relative_error_limit_is_strict) {
  // At e = 0 the relative error is |g| / 1e-7, so g = 10 T * 1e-7 sits exactly on MARE = 10 T
  // (T = 2^-13 for fp32 and wider). Twenty elements keep MERE = T / 2 below its own limit.
  const OutputCheck c = tolerance(DType::kF64, Standard::kMereMare);
  const double edge = 10 * 0x1p-13 * 1e-7;
  std::vector<double> g(20, 0.0);
  g[0] = edge;
  EXPECT_FALSE(passes(c, f64({20}, std::vector<double>(20, 0.0)), of(DType::kF64, {20}, g)));
  g[0] = std::nextafter(edge, 0.0);
  EXPECT_TRUE(passes(c, f64({20}, std::vector<double>(20, 0.0)), of(DType::kF64, {20}, g)));
}

TEST(CompareDualThousandth, one_in_a_thousand_may_miss) {
  const OutputCheck c = tolerance(DType::kF16, Standard::kDualThousandth);
  const Tensor e = f64({2000}, std::vector<double>(2000, 100.0));
  std::vector<double> g(2000, 100.0);
  g[5] = 101;
  g[6] = 101;  // 2 of 2000 = 0.1 %
  EXPECT_TRUE(passes(c, e, of(DType::kF16, {2000}, g)));
  g[7] = 101;
  EXPECT_FALSE(passes(c, e, of(DType::kF16, {2000}, g)));
}

TEST(CompareNonFinite, overflow_and_infinities) {
  const OutputCheck c = tolerance(DType::kF16, Standard::kBound);
  // 70000 is beyond the f16 range: the device's inf is the correctly rounded result.
  EXPECT_TRUE(passes(c, f64({1}, {70000.0}), of(DType::kF16, {1}, {INFINITY})));
  EXPECT_FALSE(passes(c, f64({1}, {70000.0}), of(DType::kF16, {1}, {65504.0})));
  EXPECT_FALSE(passes(c, f64({1}, {1.0}), of(DType::kF16, {1}, {INFINITY})));
  EXPECT_TRUE(passes(c, f64({1}, {-INFINITY}), of(DType::kF16, {1}, {-INFINITY})));
}

TEST(CompareShape, mismatched_shapes_fail) {
  EXPECT_FALSE(passes(exact(DType::kF32), f64({2, 2}, {1, 2, 3, 4}), of(DType::kF32, {4}, {1, 2, 3, 4})));
}

TEST(ComparePoison, defined_element_left_as_poison_is_named) {
  const Tensor e = f64({3}, {1, 2, 3});
  Tensor g = of(DType::kF16, {3}, {1, 2, 3});
  g.set_bits(1, poison_bits(DType::kF16));
  const CompareResult r = compare_output(exact(DType::kF16), e, g, Tensor(), Tensor(), poison_bits(DType::kF16));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.metrics.poison_left, 1);
  ASSERT_FALSE(r.first_failures.empty());
  EXPECT_TRUE(r.first_failures[0].poison);
  EXPECT_EQ(r.first_failures[0].index, std::vector<int64_t>{1});
}

TEST(ComparePoison, integer_poison_value_within_tolerance_is_a_write) {
  // int8 poison is 0xA5 = -91, also a valid value. Expected -91.6 rounds to -92; a one-step
  // quantized check accepts -91 there, so -91 is a correct write, not an unwritten element.
  // At expected 5, -91 is far outside the tolerance: left unwritten.
  OutputCheck q;
  q.name = "y";
  q.kind = CheckKind::kQuantized;
  q.device_dtype = DType::kI8;
  q.max_steps = 1;
  ASSERT_EQ(static_cast<int8_t>(poison_bits(DType::kI8)), -91);
  const CompareResult near = compare_output(q, f64({2}, {-91.6, 5}), of(DType::kI8, {2}, {-91, 5}), Tensor(),
                                            Tensor(), poison_bits(DType::kI8));
  EXPECT_TRUE(near.passed) << near.message;
  EXPECT_EQ(near.metrics.poison_left, 0);
  const CompareResult far = compare_output(q, f64({2}, {-91.6, 5}), of(DType::kI8, {2}, {-91, -91}), Tensor(),
                                           Tensor(), poison_bits(DType::kI8));
  EXPECT_FALSE(far.passed);
  EXPECT_EQ(far.metrics.poison_left, 1);
}

TEST(CompareMetrics, hand_computed_metrics) {
  // errors +3 and +4 on expected 10 and 20: max abs 4, RMSE sqrt((9 + 16) / 2), balance +1,
  // MERE = (0.3 + 0.2) / 2 (up to the 1e-7 guard), max rel 0.3.
  OutputCheck c = tolerance(DType::kF64, Standard::kAllclose);
  c.tol.atol = 10;
  const CompareResult r = compare_output(c, f64({2}, {10, 20}), of(DType::kF64, {2}, {13, 24}), Tensor(), Tensor());
  EXPECT_DOUBLE_EQ(r.metrics.max_abs, 4);
  EXPECT_DOUBLE_EQ(r.metrics.rmse, std::sqrt(12.5));
  EXPECT_DOUBLE_EQ(r.metrics.error_balance, 1.0);
  EXPECT_NEAR(r.metrics.mere, 0.25, 1e-6);
  EXPECT_NEAR(r.metrics.max_rel, 0.3, 1e-12);
  // cosine of (13, 24) with (10, 20): (130 + 480) / (sqrt(745) * sqrt(500))
  EXPECT_NEAR(r.metrics.cosine, 610 / (std::sqrt(745.0) * std::sqrt(500.0)), 1e-12);
}

TEST(CompareMetrics, ulp_histogram_buckets) {
  // f16 at 1.0: ulp = 2^-10. Errors of 0, 1, 2 and 3 ulps land in buckets 0, 1, 2 and 3 (3-4).
  OutputCheck c = tolerance(DType::kF16, Standard::kAllclose);
  c.tol.atol = 1;
  const double u = 0x1p-10;
  const CompareResult r = compare_output(c, f64({4}, {1, 1, 1, 1}),
                                         of(DType::kF16, {4}, {1, 1 + u, 1 + 2 * u, 1 + 3 * u}), Tensor(), Tensor());
  EXPECT_EQ(r.metrics.ulp_hist[0], 1);
  EXPECT_EQ(r.metrics.ulp_hist[1], 1);
  EXPECT_EQ(r.metrics.ulp_hist[2], 1);
  EXPECT_EQ(r.metrics.ulp_hist[3], 1);
  EXPECT_DOUBLE_EQ(r.metrics.max_ulp, 3);
}

TEST(CompareWorst, failures_are_reported_by_multi_index_in_order) {
  const Tensor e = f64({2, 3}, {0, 1, 2, 3, 4, 5});
  const Tensor g = of(DType::kF32, {2, 3}, {0, 1, 9, 3, 4, 7});
  const CompareResult r = compare_output(exact(DType::kF32), e, g, Tensor(), Tensor());
  ASSERT_EQ(r.first_failures.size(), 2u);
  EXPECT_EQ(r.first_failures[0].index, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(r.first_failures[1].index, (std::vector<int64_t>{1, 2}));
  ASSERT_FALSE(r.worst.empty());
  EXPECT_EQ(r.worst[0].index, (std::vector<int64_t>{0, 2}));  // error 7 beats error 2
}

TEST(Vacuity, distinct_rows_and_finite_tolerance_are_trusted) {
  const Tensor e = f64({2, 2}, {1, 2, 3, 4});
  const Tensor g = of(DType::kF32, {2, 2}, {1, 2, 3, 4});
  EXPECT_FALSE(vacuity_check(exact(DType::kF32), e, g, Tensor(), Tensor()).has_value());
  OutputCheck b = tolerance(DType::kF32, Standard::kBound);
  b.tol.c = 10;
  EXPECT_FALSE(vacuity_check(b, e, g, f64({2, 2}, {1, 1, 1, 1}), Tensor()).has_value());
}

TEST(Vacuity, identical_rows_rely_on_the_element_perturbation) {
  // Every routing slot dropped: the whole output is the zero fill. No row permutation changes it,
  // but one element moved off zero is seen, so the comparison is trusted.
  const Tensor zeros = of(DType::kF16, {3, 4}, std::vector<double>(12, 0.0));
  EXPECT_FALSE(vacuity_check(exact(DType::kF16), f64({3, 4}, std::vector<double>(12, 0.0)), zeros, Tensor(), Tensor())
                   .has_value());
  const Tensor g = of(DType::kI32, {3, 2}, {5, 6, 5, 6, 5, 6});
  EXPECT_FALSE(vacuity_check(exact(DType::kI32), g, g, Tensor(), Tensor()).has_value());
}

TEST(Vacuity, identical_rows_whose_elements_cannot_be_perturbed_visibly_are_mistrusted) {
  // The same uniform output under checks that would pass any finite value: no perturbation of a
  // defined element is seen.
  OutputCheck b = tolerance(DType::kF16, Standard::kBound);
  const Tensor e = f64({3, 2}, std::vector<double>(6, 0.0));
  const Tensor g = of(DType::kF16, {3, 2}, std::vector<double>(6, 0.0));
  EXPECT_TRUE(vacuity_check(b, e, g, f64({3, 2}, std::vector<double>(6, INFINITY)), Tensor()).has_value());
  OutputCheck a = tolerance(DType::kF16, Standard::kAllclose);
  a.tol.max_bad_fraction = 1.0;
  EXPECT_TRUE(vacuity_check(a, e, g, Tensor(), Tensor()).has_value());
}

TEST(Vacuity, an_output_of_nan_and_inf_is_trusted_because_a_number_there_fails) {
  // A token payload of NaN and -Inf copied byte for byte: turning either into a number is seen.
  const Tensor e = f64({1, 2}, {NAN, -INFINITY});
  const Tensor g = of(DType::kF16, {1, 2}, {NAN, -INFINITY});
  EXPECT_FALSE(vacuity_check(exact(DType::kF16), e, g, Tensor(), Tensor()).has_value());
  const CompareResult original = compare_output(exact(DType::kF16), e, g, Tensor(), Tensor());
  ASSERT_TRUE(original.passed);
  EXPECT_FALSE(vacuity_check(exact(DType::kF16), e, g, Tensor(), Tensor(), &original).has_value());
}

TEST(Vacuity, infinite_tolerance_is_vacuous) {
  OutputCheck b = tolerance(DType::kF16, Standard::kBound);
  const Tensor e = f64({2}, {1, 2});
  const Tensor g = of(DType::kF16, {2}, {1, 2});
  EXPECT_TRUE(vacuity_check(b, e, g, f64({2}, {INFINITY, INFINITY}), Tensor()).has_value());
}

TEST(Vacuity, an_output_the_reference_declares_wholly_undefined_is_not_vacuous) {
  // Every element undefined (care 0: by the API, or beyond the kernel's range): any output is
  // right there, so no defect can hide in it (issue 22); one defined element makes it checkable.
  const Tensor e = f64({2}, {1, 2});
  const Tensor g = of(DType::kF32, {2}, {1, 2});
  EXPECT_FALSE(vacuity_check(exact(DType::kF32), e, g, Tensor(), of(DType::kU8, {2}, {0, 0})).has_value());
  EXPECT_FALSE(vacuity_check(exact(DType::kF32), e, g, Tensor(), of(DType::kU8, {2}, {0, 1})).has_value());
  // ... while the one defined element still has to fail when moved: a tolerance that accepts any
  // value there is vacuous.
  OutputCheck wide = tolerance(DType::kF32, Standard::kAllclose);
  wide.tol.atol = 1e39;
  EXPECT_TRUE(vacuity_check(wide, e, g, Tensor(), of(DType::kU8, {2}, {0, 1})).has_value());
}

TEST(Vacuity, fraction_standards_need_enough_perturbed_elements) {
  OutputCheck c = tolerance(DType::kF32, Standard::kAllclose);
  c.tol.atol = 0.01;
  c.tol.max_bad_fraction = 0.5;  // 2 of 4 may fail: the check perturbs 3
  const Tensor e = f64({4}, {1, 2, 3, 4});
  const Tensor g = of(DType::kF32, {4}, {1, 2, 3, 4});
  EXPECT_FALSE(vacuity_check(c, e, g, Tensor(), Tensor()).has_value());
  c.tol.max_bad_fraction = 1.0;  // nothing can fail
  EXPECT_TRUE(vacuity_check(c, e, g, Tensor(), Tensor()).has_value());
}

TEST(Vacuity, sparse_judgement_agrees_with_a_full_comparison) {
  // The runner passes the original result so only the perturbed elements are re-judged; both
  // paths must reach the same verdict on every standard decided elementwise.
  OutputCheck a = tolerance(DType::kF16, Standard::kAllclose);
  a.tol.atol = 0.01;
  for (double fraction : {0.0, 0.25, 0.5, 1.0}) {
    a.tol.max_bad_fraction = fraction;
    const Tensor e = f64({2, 2}, {1, 2, 3, 4});
    const Tensor g = of(DType::kF16, {2, 2}, {1, 2, 3.5, 4});  // one element already bad
    const CompareResult original = compare_output(a, e, g, Tensor(), Tensor());
    if (!original.passed) continue;
    EXPECT_EQ(vacuity_check(a, e, g, Tensor(), Tensor()).has_value(),
              vacuity_check(a, e, g, Tensor(), Tensor(), &original).has_value())
        << "fraction " << fraction;
  }
  const Tensor ei = of(DType::kI32, {3, 2}, {5, 6, 5, 6, 5, 6});
  const CompareResult oi = compare_output(exact(DType::kI32), ei, ei, Tensor(), Tensor());
  EXPECT_FALSE(vacuity_check(exact(DType::kI32), ei, ei, Tensor(), Tensor(), &oi).has_value());
  const Tensor ed = of(DType::kI32, {3, 2}, {5, 6, 7, 6, 5, 6});
  const CompareResult od = compare_output(exact(DType::kI32), ed, ed, Tensor(), Tensor());
  EXPECT_FALSE(vacuity_check(exact(DType::kI32), ed, ed, Tensor(), Tensor(), &od).has_value());
}

}  // namespace
}  // namespace opgate
