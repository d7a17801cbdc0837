// Comparator metrics and report points by hand arithmetic: MERE, MARE, max rel, RMSE, cosine,
// error balance, budget used, every ulp-histogram bucket edge, the first failures and the worst
// points (cap, order, which elements), and the per-standard allowances at a value where a
// misplaced operator would change the verdict.
#include <cmath>

#include <gtest/gtest.h>

#include "core/compare.h"
#include "tests/core/compare_testing.h"
#include "core/guard.h"

namespace opgate {
namespace {

using namespace compare_testing;  // NOLINT(google-build-using-namespace): test helpers

OutputCheck allclose(DType t, double atol) {
  OutputCheck c = tolerance(t, Standard::kAllclose);
  c.tol.atol = atol;
  return c;
}

TEST(CompareMetrics, four_elements_by_hand) {
  // e = (1, -2, 4, 0), g = (1.5, -2, 3, 1e-6); allclose atol 2 (every element passes).
  // |g - e| = (0.5, 0, 1, 1e-6).
  //   max abs  = 1
  //   max rel  = max(0.5 / 1, 0 / 2, 1 / 4) = 0.5          (e = 0 has no relative error)
  //   MARE     = max over |g - e| / (|e| + 1e-7) = 1e-6 / 1e-7 = 10   (the e = 0 element)
  //   MERE     = (0.5 / (1 + 1e-7) + 0 + 1 / (4 + 1e-7) + 10) / 4 = (0.49999995 + 0.249999994 + 10) / 4
  //            = 2.687499986
  //   RMSE     = sqrt((0.25 + 0 + 1 + 1e-12) / 4) = sqrt(0.3125)
  //   balance  = (#above - #below) / compared = (2 - 1) / 4 = 0.25   (the equal element counts neither)
  //   cosine   = (1.5 + 4 + 12 + 0) / sqrt((1 + 4 + 16) * (2.25 + 4 + 9 + 1e-12)) = 17.5 / sqrt(21 * 15.25)
  //   budget   = max |g - e| / allowed = 1 / 2
  const CompareResult r = compare_output(allclose(DType::kF64, 2), f64({4}, {1, -2, 4, 0}),
                                         of(DType::kF64, {4}, {1.5, -2, 3, 1e-6}), Tensor(), Tensor());
  ASSERT_TRUE(r.passed) << r.message;
  const CompareMetrics& m = r.metrics;
  EXPECT_EQ(m.elements, 4);
  EXPECT_EQ(m.compared, 4);
  EXPECT_EQ(m.mismatches, 0);
  EXPECT_DOUBLE_EQ(m.max_abs, 1);
  EXPECT_DOUBLE_EQ(m.max_rel, 0.5);
  EXPECT_NEAR(m.mare, 10, 1e-9);
  EXPECT_NEAR(m.mere, 2.687499986, 1e-9);
  EXPECT_NEAR(m.rmse, std::sqrt(0.3125), 1e-12);
  EXPECT_DOUBLE_EQ(m.error_balance, 0.25);
  EXPECT_NEAR(m.cosine, 17.5 / std::sqrt(21 * 15.25), 1e-12);
  EXPECT_DOUBLE_EQ(m.budget_used, 0.5);
}

TEST(CompareMetrics, cosine_of_zero_vectors) {
  // Both zero: the same (cosine 1). Expected zero but got not: nothing alike (cosine 0).
  const OutputCheck c = allclose(DType::kF64, 2);
  EXPECT_DOUBLE_EQ(compare_output(c, f64({2}, {0, 0}), of(DType::kF64, {2}, {0, 0}), Tensor(), Tensor()).metrics.cosine, 1);
  EXPECT_DOUBLE_EQ(compare_output(c, f64({2}, {0, 0}), of(DType::kF64, {2}, {0, 1}), Tensor(), Tensor()).metrics.cosine, 0);
  EXPECT_DOUBLE_EQ(compare_output(c, f64({2}, {0, 1}), of(DType::kF64, {2}, {0, 0}), Tensor(), Tensor()).metrics.cosine, 0);
  // Opposite vectors: -1.
  EXPECT_DOUBLE_EQ(compare_output(allclose(DType::kF64, 10), f64({2}, {1, 2}), of(DType::kF64, {2}, {-1, -2}), Tensor(),
                                  Tensor())
                       .metrics.cosine,
                   -1);
}

TEST(CompareMetrics, error_balance_counts_direction_over_compared_elements) {
  // Three below, one above, one equal: (1 - 3) / 5 = -0.4.
  const CompareResult r = compare_output(allclose(DType::kF64, 1), f64({5}, {1, 1, 1, 1, 1}),
                                         of(DType::kF64, {5}, {0.5, 0.9, 0.99, 1.5, 1}), Tensor(), Tensor());
  EXPECT_DOUBLE_EQ(r.metrics.error_balance, -0.4);
}

TEST(CompareMetrics, nothing_compared_leaves_the_balance_at_zero) {
  // An all-undefined care mask: no element compared, so no mean is taken (0, not 0 / 0).
  const CompareResult r = compare_output(allclose(DType::kF64, 1), f64({2}, {1, 2}), of(DType::kF64, {2}, {3, 0}),
                                         Tensor(), of(DType::kU8, {2}, {0, 0}));
  EXPECT_EQ(r.metrics.compared, 0);
  EXPECT_DOUBLE_EQ(r.metrics.error_balance, 0);
  EXPECT_TRUE(r.passed);
}

TEST(ComparePoison, an_unwritten_element_fails_even_where_misses_are_allowed) {
  // int8 allclose allowing 2 of 4 elements to miss; element 1 still holds the int8 poison (-91)
  // where 6 is expected: one miss is within the allowance, but an unwritten element always fails.
  OutputCheck c = allclose(DType::kI8, 0.5);
  c.tol.max_bad_fraction = 0.5;
  const CompareResult r = compare_output(c, f64({4}, {5, 6, 7, 8}), of(DType::kI8, {4}, {5, -91, 7, 8}), Tensor(),
                                         Tensor(), poison_bits(DType::kI8));
  EXPECT_EQ(r.metrics.mismatches, 1);
  EXPECT_EQ(r.metrics.poison_left, 1);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("1 defined element(s) left unwritten"), std::string::npos) << r.message;
}

TEST(CompareMetrics, ulp_histogram_every_bucket_edge) {
  // f16 at 1.0: ulp 2^-10, every g = 1 + k ulp is an f16 value. Buckets: 0 | 1 | 2 | 3-4 | 5-8 |
  // 9-16 | 17-64 | >64; each edge k and k + 1 (both sides) once:
  //   k = 0 -> b0; 1 -> b1; 2 -> b2; 3, 4 -> b3; 5, 8 -> b4; 9, 16 -> b5; 17, 64 -> b6; 65 -> b7.
  const std::vector<double> ks{0, 1, 2, 3, 4, 5, 8, 9, 16, 17, 64, 65};
  std::vector<double> g;
  for (double k : ks) g.push_back(1 + k * 0x1p-10);
  const auto n = static_cast<int64_t>(ks.size());
  const CompareResult r = compare_output(allclose(DType::kF16, 1), f64({n}, std::vector<double>(ks.size(), 1.0)),
                                         of(DType::kF16, {n}, g), Tensor(), Tensor());
  const std::array<int64_t, 8> expected{1, 1, 1, 2, 2, 2, 2, 1};
  EXPECT_EQ(r.metrics.ulp_hist, expected);
  EXPECT_DOUBLE_EQ(r.metrics.max_ulp, 65);
}

TEST(CompareMetrics, budget_used_is_the_largest_share_of_the_allowance) {
  // allclose atol 0.5, rtol 0.25: allowed = 0.5 + 0.25 |e| = 0.75 at e = 1 and 1.5 at e = 4.
  // Errors 0.3 and 1.2: shares 0.4 and 0.8.
  OutputCheck c = allclose(DType::kF64, 0.5);
  c.tol.rtol = 0.25;
  const CompareResult r = compare_output(c, f64({2}, {1, 4}), of(DType::kF64, {2}, {1.3, 5.2}), Tensor(), Tensor());
  EXPECT_TRUE(r.passed);
  EXPECT_NEAR(r.metrics.budget_used, 0.8, 1e-12);
}

TEST(CompareAscendMixed, element_allowance_grows_with_the_expected_value) {
  // fp16: allowed = 2^-9 + 2^-9 |e|; at e = 100 that is 0.197. f16 spacing at 100 is 1/16, so
  // 100.125 (error 0.125) passes and 100.25 (error 0.25) fails (one bad of one is above 1 %; the
  // cap max(0.1, 32 * 1/16 = 2) is not reached).
  const OutputCheck c = tolerance(DType::kF16, Standard::kAscendMixed);
  EXPECT_TRUE(compare_output(c, f64({1}, {100}), of(DType::kF16, {1}, {100.125}), Tensor(), Tensor()).passed);
  EXPECT_FALSE(compare_output(c, f64({1}, {100}), of(DType::kF16, {1}, {100.25}), Tensor(), Tensor()).passed);
}

TEST(CompareAscendMixed, cap_is_32_ulp_at_the_worst_element_above_the_floor) {
  // fp16 at 1000: spacing 0.5, cap = max(0.1, 32 * 0.5) = 16. The element allowance there is
  // 2^-9 (1 + 1000) = 1.955, so g = 1010 (error 10) is a bad element; with 199 exact elements it
  // is 1 bad of 200 (allowed 2), and 10 <= 16 keeps it under the cap. g = 1020 (error 20) is over.
  std::vector<double> e(200, 1000.0), g(200, 1000.0);
  const OutputCheck c = tolerance(DType::kF16, Standard::kAscendMixed);
  g[0] = 1010;
  EXPECT_TRUE(compare_output(c, f64({200}, e), of(DType::kF16, {200}, g), Tensor(), Tensor()).passed);
  g[0] = 1020;
  const CompareResult over = compare_output(c, f64({200}, e), of(DType::kF16, {200}, g), Tensor(), Tensor());
  EXPECT_FALSE(over.passed);
  // The message names the aggregate that failed: 1 bad of 200 is within the ratio, the cap is not.
  EXPECT_NE(over.message.find("max abs error 20 > cap 16"), std::string::npos) << over.message;
}

TEST(CompareBound, a_wider_output_term_allows_c_u_magnitude_plus_its_ulps) {
  // f32, c = 2, u_acc = 2^-24, out_ulps = 1 (not one rounding, so the plain allowance applies):
  // at e = 1, magnitude 100: 2 * 2^-24 * 100 + 1 * 2^-23 = 1.19209e-5 + 1.192e-7 = 1.20401e-5.
  OutputCheck c = tolerance(DType::kF32, Standard::kBound);
  c.tol.c = 2;
  c.tol.u_acc = 0x1p-24;
  c.tol.out_ulps = 1;
  const Tensor mag = f64({1}, {100});
  EXPECT_TRUE(compare_output(c, f64({1}, {1}), of(DType::kF32, {1}, {1 + 1.2e-5}), mag, Tensor()).passed);
  EXPECT_FALSE(compare_output(c, f64({1}, {1}), of(DType::kF32, {1}, {1 + 1.21e-5}), mag, Tensor()).passed);
}

TEST(CompareAscendMixed, the_fp16_floor_of_the_cap_is_0_1_exactly) {
  // fp16 near 2: 32 ulp(2) = 32 * 2^-9 = 0.0625 < 0.1, so the cap is the floor 0.1. One bad element
  // of 200 (ratio fine) with got = 2.099609375 (an f16 value) and e = got - d, so |got - e| = d:
  //   d = 0.09999 <= 0.1 passes (a floor of 0.1 held in fp16, 0.0999755859375, would fail it);
  //   d = 0.1000000007 > 0.1 fails (a floor held in float, 0.100000001490116, would pass it).
  const OutputCheck c = tolerance(DType::kF16, Standard::kAscendMixed);
  for (auto [d, ok] : {std::pair<double, bool>{0.09999, true}, {0.1000000007, false}}) {
    std::vector<double> e(200, 2.0), g(200, 2.0);
    g[0] = 2.099609375;
    e[0] = g[0] - d;
    const CompareResult r = compare_output(c, f64({200}, e), of(DType::kF16, {200}, g), Tensor(), Tensor());
    EXPECT_EQ(r.metrics.mismatches, 1) << d;
    EXPECT_EQ(r.passed, ok) << d << ": " << r.message;
  }
}

TEST(CompareAscendMixed, the_fp32_floor_of_the_cap_is_0_01_exactly) {
  // fp32 near 2: 32 ulp(2) = 32 * 2^-22 = 7.6e-6 < 0.01, so the cap is the floor 0.01. One bad
  // element of 200 (its allowance 2^-16 + 2^-10 * 2 = 0.00197 < d) with got = 2.009765625 (an f32
  // value) and e = got - d:
  //   d = 0.0099999999 <= 0.01 passes (a floor of 0.01 held in float, 0.0099999997765, would fail);
  //   d = 0.0100000001 > 0.01 fails.
  const OutputCheck c = tolerance(DType::kF32, Standard::kAscendMixed);
  for (auto [d, ok] : {std::pair<double, bool>{0.0099999999, true}, {0.0100000001, false}}) {
    std::vector<double> e(200, 2.0), g(200, 2.0);
    g[0] = 2.009765625;
    e[0] = g[0] - d;
    const CompareResult r = compare_output(c, f64({200}, e), of(DType::kF32, {200}, g), Tensor(), Tensor());
    EXPECT_EQ(r.metrics.mismatches, 1) << d;
    EXPECT_EQ(r.passed, ok) << d << ": " << r.message;
  }
}

TEST(CompareAscendMixed, the_cap_is_taken_at_the_first_element_with_the_largest_error) {
  // Two bad elements of 300 (2 allowed), both with error 10: element 0 at e = 1000 (f16 spacing
  // 0.5, cap max(0.1, 16) = 16) and element 1 at e = 2 (cap max(0.1, 32 * 2^-9) = 0.1). The cap
  // is the one at the first of them in index order: 10 <= 16 passes; in the other order it fails.
  const OutputCheck c = tolerance(DType::kF16, Standard::kAscendMixed);
  std::vector<double> e(300, 1.0), g(300, 1.0);
  e[0] = 1000;
  g[0] = 1010;
  e[1] = 2;
  g[1] = 12;
  const CompareResult first_wide = compare_output(c, f64({300}, e), of(DType::kF16, {300}, g), Tensor(), Tensor());
  EXPECT_EQ(first_wide.metrics.mismatches, 2);
  EXPECT_TRUE(first_wide.passed) << first_wide.message;
  std::swap(e[0], e[1]);
  std::swap(g[0], g[1]);
  EXPECT_FALSE(compare_output(c, f64({300}, e), of(DType::kF16, {300}, g), Tensor(), Tensor()).passed);
}

TEST(CompareMereMare, the_message_names_the_mean_error) {
  // fp32, T = 2^-13 = 0.00012207: three of four elements 3e-4 high (each below 10 T, so no element
  // fails), MERE = 3 * 3e-4 / 4 = 2.25e-4 >= T.
  const OutputCheck c = tolerance(DType::kF32, Standard::kMereMare);
  const CompareResult r =
      compare_output(c, f64({4}, {1, 1, 1, 1}), of(DType::kF32, {4}, {1 + 3e-4, 1 + 3e-4, 1 + 3e-4, 1}), Tensor(), Tensor());
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.metrics.mismatches, 0);
  EXPECT_NE(r.message.find("MERE 0.000225"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find(">= 0.00012207"), std::string::npos) << r.message;
}

TEST(CompareDualThousandth, element_allowance_is_relative_above_one) {
  // fp16: allowed = 1e-3 max(1, |e|): 0.1 at e = 100, 1e-3 at e = 0.5. f16 spacing at 100 is 1/16:
  // 100.0625 passes, 100.125 fails (one bad of one is above 0.1 %).
  const OutputCheck c = tolerance(DType::kF16, Standard::kDualThousandth);
  EXPECT_TRUE(compare_output(c, f64({1}, {100}), of(DType::kF16, {1}, {100.0625}), Tensor(), Tensor()).passed);
  EXPECT_FALSE(compare_output(c, f64({1}, {100}), of(DType::kF16, {1}, {100.125}), Tensor(), Tensor()).passed);
  // At 0.5 (spacing 2^-11 = 4.9e-4): 0.5 + 2^-11 passes, 0.5 + 2^-10 (9.8e-4) passes, + 3 * 2^-11 fails.
  EXPECT_TRUE(compare_output(c, f64({1}, {0.5}), of(DType::kF16, {1}, {0.5 + 0x1p-10}), Tensor(), Tensor()).passed);
  EXPECT_FALSE(compare_output(c, f64({1}, {0.5}), of(DType::kF16, {1}, {0.5 + 3 * 0x1p-11}), Tensor(), Tensor()).passed);
}

TEST(CompareWorst, first_failures_are_the_first_ten_failing_elements_in_index_order) {
  // 12 elements, expected 0, got i + 1 under allclose atol 2.5: elements 0 and 1 pass (errors 1, 2),
  // elements 2..11 fail. first_failures: exactly the 10 failing ones 2..11 in order (none of the
  // passing ones even though their error is nonzero).
  std::vector<double> g;
  for (int i = 0; i < 14; ++i) g.push_back(i + 1);
  const CompareResult r = compare_output(allclose(DType::kF64, 2.5), f64({14}, std::vector<double>(14, 0.0)),
                                         of(DType::kF64, {14}, g), Tensor(), Tensor());
  EXPECT_EQ(r.metrics.mismatches, 12);
  ASSERT_EQ(r.first_failures.size(), 10u);
  for (size_t k = 0; k < 10; ++k) EXPECT_EQ(r.first_failures[k].flat, static_cast<int64_t>(k) + 2) << k;
  // worst: the 10 largest errors, largest first: elements 13, 12, ..., 4.
  ASSERT_EQ(r.worst.size(), 10u);
  for (size_t k = 0; k < 10; ++k) EXPECT_EQ(r.worst[k].flat, 13 - static_cast<int64_t>(k)) << k;
}

TEST(CompareWorst, failing_elements_rank_before_passing_ones_and_points_carry_their_numbers) {
  // allclose atol 1, rtol 1 at e = (2, 0, 0.5): allowed = 1 + |e| = (3, 1, 1.5).
  // g = (4.5, 1.2, 1.5): errors (2.5, 1.2, 1) and shares (0.833, 1.2, 0.667): element 1 fails.
  // Worst order: 1 (failing), then 0 (0.833), then 2 (0.667).
  OutputCheck c = allclose(DType::kF64, 1);
  c.tol.rtol = 1;
  const CompareResult r = compare_output(c, f64({3}, {2, 0, 0.5}), of(DType::kF64, {3}, {4.5, 1.2, 1.5}), Tensor(), Tensor());
  EXPECT_FALSE(r.passed);
  ASSERT_EQ(r.first_failures.size(), 1u);
  const ComparePoint& p = r.first_failures[0];
  EXPECT_EQ(p.flat, 1);
  EXPECT_EQ(p.index, std::vector<int64_t>{1});
  EXPECT_DOUBLE_EQ(p.expected, 0);
  EXPECT_DOUBLE_EQ(p.got, 1.2);
  EXPECT_DOUBLE_EQ(p.abs_err, 1.2);
  EXPECT_NEAR(p.rel_err, 1.2e7, 1e-3);  // 1.2 / (0 + 1e-7)
  EXPECT_DOUBLE_EQ(p.allowed, 1);
  EXPECT_FALSE(p.interval);
  ASSERT_EQ(r.worst.size(), 3u);
  EXPECT_EQ(r.worst[0].flat, 1);
  EXPECT_EQ(r.worst[1].flat, 0);
  EXPECT_EQ(r.worst[2].flat, 2);
  EXPECT_NEAR(r.worst[1].rel_err, 2.5 / (2 + 1e-7), 1e-12);
}

TEST(CompareWorst, among_equal_errors_the_first_elements_are_kept) {
  // 12 elements, all off by 1 (exact, so all fail equally): the worst list keeps the first ten.
  OutputCheck c;
  c.name = "out";
  c.kind = CheckKind::kExact;
  c.device_dtype = DType::kF32;
  const CompareResult r = compare_output(c, f64({12}, std::vector<double>(12, 0.0)),
                                         of(DType::kF32, {12}, std::vector<double>(12, 1.0)), Tensor(), Tensor());
  ASSERT_EQ(r.worst.size(), 10u);
  std::vector<bool> seen(12, false);
  for (const ComparePoint& p : r.worst) seen[static_cast<size_t>(p.flat)] = true;
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(seen[i], i < 10) << i;
}

TEST(CompareWorst, an_exact_output_ranks_by_absolute_error) {
  // Exact: no allowance, so the errors themselves order the worst points: |9 - 2| = 7 > |7 - 5| = 2
  // > |3.5 - 3| = 0.5.
  OutputCheck c;
  c.name = "out";
  c.kind = CheckKind::kExact;
  c.device_dtype = DType::kF32;
  const CompareResult r = compare_output(c, f64({4}, {0, 5, 2, 3}), of(DType::kF32, {4}, {0, 7, 9, 3.5}), Tensor(), Tensor());
  ASSERT_EQ(r.worst.size(), 3u);
  EXPECT_EQ(r.worst[0].flat, 2);
  EXPECT_EQ(r.worst[1].flat, 1);
  EXPECT_EQ(r.worst[2].flat, 3);
  EXPECT_EQ(r.metrics.determined, 4);
  EXPECT_DOUBLE_EQ(r.metrics.budget_used, 0);  // no allowance, no share
}

TEST(CompareWorst, a_one_rounding_bound_point_names_its_accepted_interval) {
  // f16 bound with acc = 0 at e = 1 + 2^-12: the interval rounds to 1 alone, so [lo, hi] = [1, 1];
  // g = 1 + 2^-10 fails.
  OutputCheck c = tolerance(DType::kF16, Standard::kBound);
  c.tol.c = 1;
  c.tol.u_acc = 1;
  const CompareResult r = compare_output(c, f64({1}, {1 + 0x1p-12}), of(DType::kF16, {1}, {1 + 0x1p-10}), f64({1}, {0}),
                                         Tensor());
  ASSERT_EQ(r.first_failures.size(), 1u);
  EXPECT_TRUE(r.first_failures[0].interval);
  EXPECT_DOUBLE_EQ(r.first_failures[0].accepted_lo, 1);
  EXPECT_DOUBLE_EQ(r.first_failures[0].accepted_hi, 1);
  EXPECT_DOUBLE_EQ(r.first_failures[0].expected_rounded, 1);
}

}  // namespace
}  // namespace opgate

namespace opgate {
namespace {

// The exact check's bulk path (matching elements skip the per-element judgement) against a plain
// elementwise formulation written here: over 3 blocks of the pass, mostly matching elements with
// sparse mismatches (one ulp, a flipped zero sign, NaN where a number is expected), a NaN and an
// Inf expected, and uncared elements, every count, the ULP histogram, the maxima and the first
// failures are those of the formulation, and the cosine and RMSE agree to rounding (the pass sums per
// block). A bulk path that dropped a count, a sum or a mismatch changes one of them.
TEST(CompareExact, bulk_metrics_equal_an_elementwise_formulation) {
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32, DType::kI32}) {
    SCOPED_TRACE(dtype_name(t));
    const int64_t rows = 1600, cols = 123, n = rows * cols;  // 3 blocks of 65,536 and a part
    Tensor e = Tensor::zeros(DType::kF64, {rows, cols});
    Tensor g = Tensor::zeros(t, {rows, cols});
    Tensor care = Tensor::zeros(DType::kU8, {rows, cols});
    const bool floating = is_floating(t);
    std::vector<int64_t> failing;
    int64_t compared = 0, zero_ulp = 0;
    double max_abs = 0, dot = 0, ne = 0, ng = 0, sq = 0;
    int64_t finite = 0;
    for (int64_t i = 0; i < n; ++i) {
      // A value of the dtype times a factor with bits below its precision (so rounding matters).
      double x = floating ? std::ldexp(1.0 + static_cast<double>(i % 1000) / 1024.0, static_cast<int>(i % 13) - 6)
                          : static_cast<double>(i % 2001) - 1000;
      if (i % 7 == 3) x = -x;
      if (i == 4000) x = std::numeric_limits<double>::quiet_NaN();
      if (i == 4001) x = std::numeric_limits<double>::infinity();
      if (i % 5000 == 17) x = floating ? -0.0 : 0.0;
      const double xr = std::isfinite(x) ? round_to(t, x) : x;
      double got = xr;
      if (i % 3001 == 1000) got = floating ? xr + ulp(t, xr) : xr + 1;  // one step off
      if (floating && i % 5000 == 17) got = 0.0;                         // +0 for -0
      if (floating && i % 40009 == 9) got = std::numeric_limits<double>::quiet_NaN();
      e.set(i, x);
      g.set(i, got);
      const bool cared = i % 911 != 4;
      care.set(i, cared ? 1 : 0);
      if (!cared) continue;
      ++compared;
      const double gr = g.get(i);  // as stored
      const bool same = std::isnan(xr) ? std::isnan(gr) : (xr == gr && std::signbit(xr) == std::signbit(gr));
      if (!same) failing.push_back(i);
      if (std::isfinite(xr) && std::isfinite(gr)) {
        max_abs = std::max(max_abs, std::fabs(gr - xr));
        sq += (gr - xr) * (gr - xr);
        ++finite;
        dot += gr * xr;
        ne += xr * xr;
        ng += gr * gr;
        if (floating && gr == xr) ++zero_ulp;
      }
    }
    const CompareResult r = compare_output(exact(t), e, g, Tensor(), care);
    EXPECT_FALSE(r.passed);
    EXPECT_EQ(r.metrics.compared, compared);
    EXPECT_EQ(r.metrics.determined, compared);
    EXPECT_EQ(r.metrics.mismatches, static_cast<int64_t>(failing.size()));
    EXPECT_DOUBLE_EQ(r.metrics.max_abs, max_abs);
    if (floating) {
      EXPECT_EQ(r.metrics.ulp_hist[0], zero_ulp);
      EXPECT_DOUBLE_EQ(r.metrics.max_ulp, 1.0);
    }
    EXPECT_NEAR(r.metrics.cosine, dot / (std::sqrt(ne) * std::sqrt(ng)), 1e-12);
    EXPECT_NEAR(r.metrics.rmse, std::sqrt(sq / static_cast<double>(finite)), 1e-12 * r.metrics.rmse);
    ASSERT_EQ(r.first_failures.size(), 10u);
    for (size_t k = 0; k < 10; ++k) EXPECT_EQ(r.first_failures[k].flat, failing[k]);
  }
}

}  // namespace
}  // namespace opgate
