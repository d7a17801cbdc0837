// The comparator at the exact edges its constants and orderings decide, each by hand arithmetic:
// the dual-thousandth rtol of each dtype, MERE at its threshold, the Ascend-mixed cap, which worst points come first and
// what they record, the fields of an undefined output, the metrics of an output without one finite
// pair, the absolute error of a one-rounding bound, and which reference values the error-balance
// gate counts (tools/mutate.py --comparator found each of these unpinned).
#include <cmath>

#include <utility>

#include <gtest/gtest.h>

#include "core/compare.h"
#include "tests/core/compare_testing.h"

namespace opgate {
namespace {

using namespace compare_testing;  // NOLINT(google-build-using-namespace): test helpers

TEST(CompareBoundaries, dual_thousandth_fp16_rtol_is_exactly_one_thousandth) {
  // g = 1001 (an fp16 value), e = 1001 / 1.00100000002 = 999.99999998: |g - e| = 1.00000002, just
  // above 1e-3 * e = 0.99999999998 but below e times 1e-3 held in fp32 (1.0000000475e-3).
  const double e = 1001 / 1.00100000002;
  ASSERT_GT(1001 - e, 1e-3 * e);
  ASSERT_LT(1001 - e, 0x1.0624dep-10 * e);
  const CompareResult r =
      compare_output(tolerance(DType::kF16, Standard::kDualThousandth), f64({1}, {e}), of(DType::kF16, {1}, {1001}),
                     Tensor(), Tensor());
  EXPECT_FALSE(r.passed) << r.message;
  EXPECT_EQ(r.metrics.mismatches, 1);
}

TEST(CompareBoundaries, dual_thousandth_fp32_rtol_is_exactly_one_ten_thousandth) {
  // e = 10000, g = 10001: |g - e| = 1 = 1e-4 * 10000 exactly (1e-4 * 1e4 rounds to 1.0), so the
  // element passes; with 1e-4 held in fp32 (9.9999997e-5) the allowance would be 0.99999997.
  const CompareResult r = compare_output(tolerance(DType::kF32, Standard::kDualThousandth), f64({1}, {10000}),
                                         of(DType::kF32, {1}, {10001}), Tensor(), Tensor());
  EXPECT_TRUE(r.passed) << r.message;
}

TEST(CompareBoundaries, mere_equal_to_its_threshold_fails) {
  // MERE < T passes (T = 2^-13 for fp32/fp64). One f64 element with |g - e| / (|e| + 1e-7) = 2^-13
  // exactly: e = 1.27051641601505, g - e = 2^-13 (|e| + 1e-7) (a power of two times a double, so
  // exact, and g - e recovers it). MARE allows 10 T, so only the MERE criterion decides.
  const double e = 1.27051641601505, g = 1.2706715083631963;
  ASSERT_EQ((g - e) / (e + 1e-7), 0x1p-13);
  const CompareResult r = compare_output(tolerance(DType::kF64, Standard::kMereMare), f64({1}, {e}),
                                         of(DType::kF64, {1}, {g}), Tensor(), Tensor());
  EXPECT_EQ(r.metrics.mismatches, 0);
  EXPECT_EQ(r.metrics.mere, 0x1p-13);
  EXPECT_FALSE(r.passed) << r.message;
}

TEST(CompareBoundaries, ascend_mixed_cap_is_inclusive) {
  // 100 fp16 elements, 1 % may fail elementwise. Element 0: e = 8.25, g = 8: |g - e| = 0.25, beyond
  // its allowance 2^-9 (1 + 8.25) = 0.018 but equal to the cap max(0.1, 32 ulp(8.25) = 32 * 2^-7).
  std::vector<double> e(100, 8.25), g(100, 8.25);
  g[0] = 8;
  const CompareResult r = compare_output(tolerance(DType::kF16, Standard::kAscendMixed), f64({100}, e),
                                         of(DType::kF16, {100}, g), Tensor(), Tensor());
  EXPECT_EQ(r.metrics.mismatches, 1);
  EXPECT_DOUBLE_EQ(r.metrics.max_abs, 0.25);
  EXPECT_TRUE(r.passed) << r.message;
  g[0] = 7.9921875;  // one fp16 ulp further: 0.2578125 > 0.25
  EXPECT_FALSE(compare_output(tolerance(DType::kF16, Standard::kAscendMixed), f64({100}, e),
                              of(DType::kF16, {100}, g), Tensor(), Tensor())
                   .passed);
}

TEST(CompareBoundaries, worst_points_rank_by_error_over_allowance_then_index) {
  // allclose atol 0, rtol 0.5, f64. Scores |g - e| / allowed:
  //   [0] e = 1,  g = 2:    1 / 0.5 = 2
  //   [1] e = 10, g = 16:   6 / 5   = 1.2  (the largest error, the smallest ratio)
  //   [2] e = 0,  g = 0.25: allowance 0, so it ranks above every finite ratio
  //   [3] e = 1,  g = 2:    2, tied with [0]: index order
  OutputCheck c = tolerance(DType::kF64, Standard::kAllclose);
  c.tol.rtol = 0.5;
  const CompareResult r =
      compare_output(c, f64({4}, {1, 10, 0, 1}), of(DType::kF64, {4}, {2, 16, 0.25, 2}), Tensor(), Tensor());
  EXPECT_FALSE(r.passed);
  ASSERT_EQ(r.worst.size(), 4u);
  EXPECT_EQ(r.worst[0].flat, 2);
  EXPECT_EQ(r.worst[1].flat, 0);
  EXPECT_EQ(r.worst[2].flat, 3);
  EXPECT_EQ(r.worst[3].flat, 1);
  // What a point records: the raw reference, the device value, the error and the allowance.
  EXPECT_EQ(r.worst[3].expected, 10);
  EXPECT_EQ(r.worst[3].expected_rounded, 10);
  EXPECT_EQ(r.worst[3].got, 16);
  EXPECT_EQ(r.worst[3].abs_err, 6);
  EXPECT_EQ(r.worst[3].allowed, 5);
}

TEST(CompareBoundaries, an_undefined_output_names_itself_and_is_not_compared) {
  OutputCheck c;
  c.name = "scratch";
  c.kind = CheckKind::kUndefined;
  const CompareResult r = compare_output(c, f64({2}, {1, 2}), of(DType::kF16, {2}, {7, 8}), Tensor(), Tensor());
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.name, "scratch");
  EXPECT_EQ(r.kind, CheckKind::kUndefined);
  EXPECT_EQ(r.message, "not compared (undefined output)");
  EXPECT_EQ(r.metrics.elements, 2);
  EXPECT_EQ(r.metrics.compared, 0);
}

TEST(CompareBoundaries, no_finite_pair_leaves_mean_errors_at_zero) {
  // Every element a matching NaN or Inf: nothing finite to average, so MERE and RMSE stay 0, not 0/0.
  const CompareResult r = compare_output(exact(DType::kF32), f64({3}, {NAN, INFINITY, -INFINITY}),
                                         of(DType::kF32, {3}, {NAN, INFINITY, -INFINITY}), Tensor(), Tensor());
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_EQ(r.metrics.mere, 0);
  EXPECT_EQ(r.metrics.rmse, 0);
}

OutputCheck fp16_one_rounding_bound() {
  OutputCheck c = tolerance(DType::kF16, Standard::kBound);
  c.tol.c = 1;
  c.tol.u_acc = 1;
  c.tol.out_ulps = 0.5;
  return c;
}

TEST(CompareBoundaries, a_one_rounding_bound_measures_the_error_against_the_reference) {
  // g = e + 2^-10 (one fp16 ulp above in [1, 2)) within acc = 2^-10: |g - e| = 2^-10 on both.
  const double u = 0x1p-10;
  const CompareResult r = compare_output(fp16_one_rounding_bound(), f64({2}, {1.5, -1.25}),
                                         of(DType::kF16, {2}, {1.5 + u, -1.25 + u}), f64({2}, {u, u}), Tensor());
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_EQ(r.metrics.max_abs, u);
}

// 128 x 128 fp16 references exactly representable (1 + k 2^-10) and devices one ulp below each.
std::pair<Tensor, Tensor> one_ulp_below_representable() {
  Tensor e = Tensor::zeros(DType::kF64, {128, 128});
  Tensor g = Tensor::zeros(DType::kF16, {128, 128});
  for (int64_t i = 0; i < e.numel(); ++i) {
    const double v = 1 + static_cast<double>(1 + i % 1000) * 0x1p-10;
    e.set(i, v);
    g.set(i, v - 0x1p-10);
  }
  return {e, g};
}

TEST(CompareBoundaries, the_balance_gate_counts_representable_references_under_rne) {
  // 128 x 128 fp16 references exactly representable (1 + k 2^-10), each device value one ulp below:
  // inside every element's bound (acc = 2^-10), but all 16384 errors go down. An exactly
  // representable reference is no tie under RNE, so every element counts and the gate fails.
  const auto [e, g] = one_ulp_below_representable();
  const CompareResult r =
      compare_output(fp16_one_rounding_bound(), e, g, Tensor::full(DType::kF64, {128, 128}, 0x1p-10), Tensor());
  EXPECT_EQ(r.metrics.mismatches, 0);
  EXPECT_EQ(r.metrics.balance_neg, 128 * 128);
  EXPECT_FALSE(r.passed) << r.message;
}

TEST(CompareBoundaries, the_balance_gate_leaves_out_elements_allowed_a_whole_relative_error) {
  // As the_balance_gate_counts_representable_references_under_rne, all 16384 devices one ulp
  // below 1 + k 2^-10, but with an allowance of 4 (more than |er| <= 2): the reference does not
  // claim the device's value is a rounding of its own, so the side is not counted and the case
  // passes. With the allowance at 1 (below every |er|) the same errors fail the gate.
  const auto [e, g] = one_ulp_below_representable();
  const OutputCheck c = fp16_one_rounding_bound();
  const CompareResult wide = compare_output(c, e, g, Tensor::full(DType::kF64, {128, 128}, 4.0), Tensor());
  EXPECT_EQ(wide.metrics.balance_neg, 0);
  EXPECT_TRUE(wide.passed) << wide.message;
  const CompareResult narrow =
      compare_output(c, e, g, Tensor::full(DType::kF64, {128, 128}, 0.5), Tensor());
  EXPECT_EQ(narrow.metrics.balance_neg, 128 * 128);
  EXPECT_FALSE(narrow.passed) << narrow.message;
}

TEST(CompareBoundaries, a_tie_reached_through_half_is_a_tie_for_the_balance_gate) {
  // An int8 output quantised through half, both roundings half away from zero (IFA per-channel
  // quantScale2): e = +-(k + 0.5 - 2^-12) for k = 1..100 lies within half an fp16 ulp (>= 2^-11
  // at |e| >= 1) below the tie k + 0.5, so f16a(e) = k + 0.5 and i8a gives k + 1, one away from
  // the correctly rounded k. Inside every bound (acc = 2^-8), but all 64 x 64 errors go away from
  // zero: the gate fails them, unless the check says the kernel rounds through half first.
  Tensor e = Tensor::zeros(DType::kF64, {64, 64});
  Tensor g = Tensor::zeros(DType::kI8, {64, 64});
  for (int64_t i = 0; i < e.numel(); ++i) {
    const double k = static_cast<double>(1 + i % 100), sign = i % 2 == 0 ? 1.0 : -1.0;
    e.set(i, sign * (k + 0.5 - 0x1p-12));
    g.set(i, sign * (k + 1));
  }
  OutputCheck c = tolerance(DType::kI8, Standard::kBound);
  c.rounding = Rounding::kHalfAway;
  c.tol.c = 1;
  c.tol.u_acc = 1;
  c.tol.out_ulps = 0.5;
  const Tensor mag = Tensor::full(DType::kF64, {64, 64}, 0x1p-8);
  const CompareResult plain = compare_output(c, e, g, mag, Tensor());
  EXPECT_EQ(plain.metrics.mismatches, 0);
  EXPECT_EQ(plain.metrics.balance_away, 64 * 64);
  EXPECT_FALSE(plain.passed) << plain.message;
  c.ties_via = DType::kF16;
  const CompareResult via = compare_output(c, e, g, mag, Tensor());
  EXPECT_EQ(via.metrics.balance_away, 0);
  EXPECT_TRUE(via.passed) << via.message;
  // Only what half rounds onto a tie is excused: e = k + 0.01, 0.49 below the tie, stays k + 0.01
  // in half (spacing <= 2^-5 below 64), and devices all one above it are still caught.
  Tensor far = Tensor::zeros(DType::kF64, {64, 64});
  Tensor far_g = Tensor::zeros(DType::kI8, {64, 64});
  for (int64_t i = 0; i < far.numel(); ++i) {
    far.set(i, 2.01 + static_cast<double>(i % 50));  // correctly rounded: 2..51
    far_g.set(i, 3 + static_cast<double>(i % 50));
  }
  const CompareResult up = compare_output(c, far, far_g, Tensor::full(DType::kF64, {64, 64}, 1.0), Tensor());
  EXPECT_EQ(up.metrics.balance_pos, 64 * 64);
  EXPECT_FALSE(up.passed) << up.message;
}

TEST(CompareBoundaries, the_vacuity_move_leaves_a_toward_zero_interval_built_from_the_magnitude) {
  // As VacuityPerturbation.a_toward_zero_bound_is_left_past_its_rounded_interval, with a realistic
  // unit (u_acc = 2^-24, so acc = 0.15u comes from a magnitude of 0.15u * 2^24): the accepted
  // interval [-1 - u, -1] is built from the element's magnitude, not from its allowance. A move
  // to -1 (1.05u from e, beyond allowed = 0.65u) would still pass; the move must reach -1 + u/2.
  OutputCheck b = tolerance(DType::kF16, Standard::kBound);
  b.rounding = Rounding::kTowardZero;
  b.tol.c = 1;
  b.tol.u_acc = 0x1p-24;
  const double u = 0x1p-10;
  const Tensor e = f64({1}, {-1 - 1.05 * u});
  const Tensor mag = f64({1}, {0.15 * u * 0x1p24});
  const Tensor g = of(DType::kF16, {1}, {-1 - u});
  ASSERT_TRUE(compare_output(b, e, g, mag, Tensor()).passed);
  ASSERT_TRUE(compare_output(b, e, of(DType::kF16, {1}, {-1.0}), mag, Tensor()).passed);
  EXPECT_FALSE(vacuity_check(b, e, g, mag, Tensor()).has_value());
}

TEST(CompareBoundaries, the_row_swap_uses_only_rows_cared_for_in_every_column) {
  // Exact f32 rows that differ only in column 0, which the care mask leaves out of both rows: no
  // row is fully compared, so there is no row swap to try, and the element move (seen) decides.
  const Tensor e = f64({2, 3}, {1, 5, 6, 2, 5, 6});
  const Tensor g = of(DType::kF32, {2, 3}, {1, 5, 6, 2, 5, 6});
  const Tensor care = of(DType::kU8, {2, 3}, {0, 1, 1, 0, 1, 1});
  ASSERT_TRUE(compare_output(exact(DType::kF32), e, g, Tensor(), care).passed);
  EXPECT_FALSE(vacuity_check(exact(DType::kF32), e, g, Tensor(), care).has_value());
}

TEST(CompareBoundaries, the_error_picture_follows_dim_0_of_a_failing_output) {
  // Exact f32, 4 rows of 2: a mismatch in row 2 (no allowance: a mismatch counts kAxisFailing).
  const CompareResult r = compare_output(exact(DType::kF32), f64({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
                                         of(DType::kF32, {4, 2}, {1, 2, 3, 4, 5, 9, 7, 8}), Tensor(), Tensor());
  ASSERT_FALSE(r.passed);
  EXPECT_EQ(r.metrics.axis_rows, 4);
  EXPECT_EQ(r.metrics.axis_budget, (std::vector<double>{0, 0, CompareMetrics::kAxisFailing, 0}));
  // allclose atol 1 over 100 rows of 1: 64 cells, row k in cell k * 64 / 100. Row 99 is 3 off
  // (share 3), row 50 is 0.5 off (share 0.5, within: it passes), every other row exact.
  OutputCheck c = tolerance(DType::kF64, Standard::kAllclose);
  c.tol.atol = 1;
  std::vector<double> e(100, 1.0), g(100, 1.0);
  g[99] = 4;
  g[50] = 1.5;
  const CompareResult wide = compare_output(c, f64({100, 1}, e), of(DType::kF64, {100, 1}, g), Tensor(), Tensor());
  ASSERT_FALSE(wide.passed);
  ASSERT_EQ(wide.metrics.axis_budget.size(), 64u);
  EXPECT_EQ(wide.metrics.axis_budget[63], 3);
  EXPECT_EQ(wide.metrics.axis_budget[50 * 64 / 100], 0.5);
  EXPECT_EQ(wide.metrics.axis_budget[0], 0);
  // A passing output carries no picture; a vector has no dim-0 axis to draw.
  g[99] = 1.5;
  EXPECT_TRUE(compare_output(c, f64({100, 1}, e), of(DType::kF64, {100, 1}, g), Tensor(), Tensor()).metrics.axis_budget.empty());
  const CompareResult flat = compare_output(exact(DType::kF32), f64({2}, {1, 2}), of(DType::kF32, {2}, {1, 3}), Tensor(), Tensor());
  EXPECT_TRUE(flat.metrics.axis_budget.empty());
}

}  // namespace
}  // namespace opgate
