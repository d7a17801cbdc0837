// The error-balance gate: the limit by hand, a synthetic device whose intermediate truncates
// (within the elementwise bound on every element) fails, the correct device never does, errors
// correlated along rows or columns, or inside a declared cluster, do not raise false alarms, a
// truncation on outputs of both signs is seen by the magnitude direction, and ties are left out.
#include "core/error_balance.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "core/compare.h"

namespace opgate {
namespace {

TEST(ErrorBalance, limit_is_z_times_the_root_of_the_larger_axis_sum) {
  // 100 x 100, one upward error in each of the first 50 rows, all in column 0: rows sum
  // 50 * 1^2 = 50, columns 50^2 = 2500; limit = 6.650 * 50 = 332.5 > 50 errors: cannot fail.
  ErrorBalance one_column(10000, 100);
  for (int64_t r = 0; r < 50; ++r) one_column.add(r * 100, 1, 1);
  EXPECT_TRUE(std::isinf(one_column.verdict().limit));
  EXPECT_TRUE(one_column.verdict().balanced);
  // 100 upward errors on the diagonal: both sums 100, limit 66.50 < 100: unbalanced.
  ErrorBalance diagonal(10000, 100);
  for (int64_t r = 0; r < 100; ++r) diagonal.add(r * 101, 1, 1);
  EXPECT_NEAR(diagonal.verdict().limit, 66.50, 1e-9);
  EXPECT_FALSE(diagonal.verdict().balanced);
  // 80 up, 20 down on the diagonal: |60| <= 66.50.
  ErrorBalance mixed(10000, 100);
  for (int64_t r = 0; r < 100; ++r) mixed.add(r * 101, r < 80 ? 1 : -1, r < 80 ? 1 : -1);
  EXPECT_EQ(mixed.verdict().n_pos, 80);
  EXPECT_EQ(mixed.verdict().n_neg, 20);
  EXPECT_TRUE(mixed.verdict().balanced);
}

TEST(ErrorBalance, the_magnitude_direction_sees_what_the_signed_one_cannot) {
  // 100 errors on the diagonal, 50 above and 50 below, all toward zero (50 positive values
  // rounded down, 50 negative values rounded up): signed |0|, magnitude |-100| > 66.50.
  ErrorBalance shrink(10000, 100);
  for (int64_t r = 0; r < 100; ++r) shrink.add(r * 101, r % 2 == 0 ? 1 : -1, -1);
  const ErrorBalance::Verdict v = shrink.verdict();
  EXPECT_EQ(v.n_pos, 50);
  EXPECT_EQ(v.n_neg, 50);
  EXPECT_EQ(v.n_away, 0);
  EXPECT_EQ(v.n_toward, 100);
  EXPECT_FALSE(v.balanced);
  // A rounded reference of 0 has no magnitude direction: 100 upward errors there count only as
  // signed ones, half of them offset by 50 downward: |0| signed, magnitude not counted.
  ErrorBalance at_zero(10000, 100);
  for (int64_t r = 0; r < 100; ++r) at_zero.add(r * 101, r % 2 == 0 ? 1 : -1, 0);
  EXPECT_EQ(at_zero.verdict().n_away + at_zero.verdict().n_toward, 0);
  EXPECT_TRUE(at_zero.verdict().balanced);
}

TEST(ErrorBalance, a_declared_cluster_replaces_rows_and_columns) {
  // 1000 elements in one row of 1000: rows and columns cannot fail (the row sum is N^2).
  // Declared clusters of 10: one upward error in each of the 100 clusters, sum 100 * 1^2,
  // limit 66.50 < 100: unbalanced.
  ErrorBalance rows(1000, 1000), clusters(1000, 1000, 10);
  for (int64_t j = 0; j < 100; ++j) {
    rows.add(j * 10 + 3, 1, 1);
    clusters.add(j * 10 + 3, 1, 1);
  }
  EXPECT_TRUE(std::isinf(rows.verdict().limit));
  EXPECT_NEAR(clusters.verdict().limit, 66.50, 1e-9);
  EXPECT_FALSE(clusters.verdict().balanced);
  // All 10 elements of the first 10 clusters err upward: sum 10 * 10^2 = 1000, limit
  // 6.650 * 31.62 = 210.3 > 100 errors: cannot fail.
  ErrorBalance packed(1000, 1000, 10);
  for (int64_t i = 0; i < 100; ++i) packed.add(i, 1, 1);
  EXPECT_TRUE(std::isinf(packed.verdict().limit));
  EXPECT_TRUE(packed.verdict().balanced);
}

TEST(ErrorBalance, the_row_sum_decides_when_it_is_the_larger) {
  // 100 x 100, two errors in each of the first 50 rows, all in distinct columns (row r: columns 2r
  // and 2r + 1): rows sum 50 * 2^2 = 200, columns 100 * 1^2 = 100; limit = 6.650 * sqrt(200) =
  // 94.045 < 100 errors. The references are 0 (away = 0), so only the signed statistic counts.
  auto fill = [](int up) {
    ErrorBalance b(10000, 100);
    int k = 0;
    for (int64_t r = 0; r < 50; ++r) {
      for (int64_t j = 0; j < 2; ++j, ++k) b.add(r * 100 + 2 * r + j, k < up ? 1 : -1, 0);
    }
    return b.verdict();
  };
  const ErrorBalance::Verdict all_up = fill(100);
  EXPECT_NEAR(all_up.limit, 6.650 * 14.142135623730951, 1e-9);
  EXPECT_EQ(all_up.n_pos, 100);
  EXPECT_EQ(all_up.n_neg, 0);
  EXPECT_FALSE(all_up.balanced);
  // 97 up, 3 down: |94| <= 94.045 (the column sum alone, limit 66.50, would fail it).
  const ErrorBalance::Verdict mostly_up = fill(97);
  EXPECT_NEAR(mostly_up.limit, 6.650 * 14.142135623730951, 1e-9);
  EXPECT_EQ(mostly_up.n_neg, 3);
  EXPECT_TRUE(mostly_up.balanced);
  // 98 up, 2 down: |96| > 94.045.
  EXPECT_FALSE(fill(98).balanced);
}

TEST(ErrorBalance, a_zero_sign_is_no_error) {
  ErrorBalance b(10000, 100);
  for (int64_t r = 0; r < 100; ++r) b.add(r * 101, 0, 1);
  const ErrorBalance::Verdict v = b.verdict();
  EXPECT_EQ(v.n_pos, 0);
  EXPECT_EQ(v.n_neg, 0);
  EXPECT_EQ(v.n_away, 0);
  EXPECT_TRUE(v.balanced);
}

TEST(ErrorBalance, a_limit_equal_to_the_error_count_cannot_be_exceeded) {
  // Rows of 155 (37 of them), 136 (6) and 1 (99) errors, width 1000, in distinct columns within a
  // row: n = 5735 + 816 + 99 = 6650, rows sum 37 * 24025 + 6 * 18496 + 99 = 10^6, columns far
  // less. limit = 6.650 * 1000 = 6650 = n, and |T| <= n always: reported as +inf (too small to tell).
  ErrorBalance b(142 * 1000, 1000);
  int64_t row = 0;
  for (auto [count, rows] : {std::pair<int, int>{155, 37}, {136, 6}, {1, 99}}) {
    for (int k = 0; k < rows; ++k, ++row) {
      for (int64_t j = 0; j < count; ++j) b.add(row * 1000 + (row + j) % 1000, 1, 1);
    }
  }
  const ErrorBalance::Verdict v = b.verdict();
  EXPECT_EQ(v.n_pos, 6650);
  EXPECT_EQ(v.n_away, 6650);
  EXPECT_TRUE(std::isinf(v.limit));
  EXPECT_TRUE(v.balanced);
}

TEST(ErrorBalance, an_imbalance_equal_to_the_limit_is_balanced) {
  // 62500 rows of 4 errors, row r in columns 4r .. 4r + 3 (mod 62500), so every column holds 4:
  // rows sum = columns sum = 62500 * 16 = 10^6, limit = 6.650 * 1000 = 6650 < n = 250000.
  // 128325 up and 121675 down, each also away from (up) or toward (down) zero: both statistics
  // |T| = 6650 = limit, balanced; one more up (|T| = 6652), not.
  auto fill = [](int64_t up) {
    ErrorBalance b(62500LL * 62500, 62500);
    int64_t k = 0;
    for (int64_t r = 0; r < 62500; ++r) {
      for (int64_t j = 0; j < 4; ++j, ++k) b.add(r * 62500 + (4 * r + j) % 62500, k < up ? 1 : -1, k < up ? 1 : -1);
    }
    return b.verdict();
  };
  const ErrorBalance::Verdict edge = fill(128325);
  EXPECT_DOUBLE_EQ(edge.limit, 6650);
  EXPECT_EQ(edge.n_pos - edge.n_neg, 6650);
  EXPECT_EQ(edge.n_away - edge.n_toward, 6650);
  EXPECT_TRUE(edge.balanced);
  EXPECT_FALSE(fill(128326).balanced);
}

TEST(ErrorBalance, a_one_dimensional_output_never_fails) {
  // One row: the row sum is N^2, so no imbalance reaches the limit.
  ErrorBalance flat(1000, 1000);
  for (int64_t i = 0; i < 1000; ++i) flat.add(i, 1, 1);
  EXPECT_TRUE(flat.verdict().balanced);
}

// A synthetic fp16 kernel: reference values uniform in [1, 2), an fp32-like accumulation whose
// error the bound allows (acc = 2^-12 absolute, a quarter of the f16 ulp 2^-10), then one RNE cast.
struct Synthetic {
  Tensor expected, magnitude, correct, truncating, shared_rows;
};
Synthetic synthetic(uint32_t seed, int64_t rows, int64_t cols) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> value(1.0, 2.0), unit(-1.0, 1.0);
  const int64_t n = rows * cols;
  const double acc = 0x1p-12;
  Synthetic s{Tensor::zeros(DType::kF64, {rows, cols}), Tensor::full(DType::kF64, {rows, cols}, acc),
              Tensor::zeros(DType::kF16, {rows, cols}), Tensor::zeros(DType::kF16, {rows, cols}),
              Tensor::zeros(DType::kF16, {rows, cols})};
  std::vector<double> row_error(static_cast<size_t>(rows));
  for (auto& r : row_error) r = unit(gen) * acc;
  for (int64_t i = 0; i < n; ++i) {
    const double e = value(gen);
    s.expected.set(i, e);
    // Correct: a symmetric accumulation error within the budget.
    s.correct.set(i, round_to(DType::kF16, e + unit(gen) * acc));
    // Defective: an intermediate truncated to 12 fractional bits, which moves every value down by
    // up to 2^-12 (within acc, so every element passes its own bound).
    s.truncating.set(i, round_to(DType::kF16, std::trunc(e * 0x1p12) * 0x1p-12));
    // Correct but correlated: one error shared by each row (a softmax denominator).
    s.shared_rows.set(i, round_to(DType::kF16, e + row_error[static_cast<size_t>(i / cols)]));
  }
  return s;
}

OutputCheck fp16_bound() {
  OutputCheck c;
  c.name = "out";
  c.kind = CheckKind::kTolerance;
  c.device_dtype = DType::kF16;
  c.tol.standard = Standard::kBound;
  c.tol.c = 1;
  c.tol.u_acc = 1;
  c.tol.out_ulps = 0.5;
  return c;
}

TEST(ErrorBalance, a_truncating_intermediate_fails_and_the_correct_kernel_passes) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const Synthetic s = synthetic(seed, 128, 128);
    const CompareResult ok = compare_output(fp16_bound(), s.expected, s.correct, s.magnitude, Tensor());
    EXPECT_TRUE(ok.passed) << "seed " << seed << ": " << ok.message;
    const CompareResult bad = compare_output(fp16_bound(), s.expected, s.truncating, s.magnitude, Tensor());
    EXPECT_EQ(bad.metrics.mismatches, 0) << "seed " << seed;  // invisible elementwise
    EXPECT_FALSE(bad.passed) << "seed " << seed << ": " << bad.message;
    EXPECT_GT(bad.metrics.balance_neg, bad.metrics.balance_pos);
  }
}

TEST(ErrorBalance, errors_shared_along_a_row_are_no_false_alarm) {
  int beyond_independent_limit = 0;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const Synthetic s = synthetic(seed, 128, 128);
    const CompareResult r = compare_output(fp16_bound(), s.expected, s.shared_rows, s.magnitude, Tensor());
    EXPECT_TRUE(r.passed) << "seed " << seed << ": " << r.message;
    const double n = static_cast<double>(r.metrics.balance_pos + r.metrics.balance_neg);
    beyond_independent_limit +=
        std::fabs(static_cast<double>(r.metrics.balance_pos - r.metrics.balance_neg)) > ErrorBalance::kZ * std::sqrt(n);
  }
  // Judged as independent elements (limit z sqrt(n)) some of these correct outputs would fail:
  // the row clusters are what keeps the correlated kernel green.
  EXPECT_GT(beyond_independent_limit, 0);
}

TEST(ErrorBalance, ties_are_left_out) {
  // Every reference value is an f16 tie k + 2^-11 (spacing 2^-10 in [1, 2)); the reference rounds
  // each half away, so a correct kernel's crossings (x just below the tie) all go down.
  std::mt19937_64 gen(7);
  std::uniform_int_distribution<int> k(0, 1023);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  const int64_t n = 128 * 128;
  Tensor e = Tensor::zeros(DType::kF64, {128, 128});
  Tensor g = Tensor::zeros(DType::kF16, {128, 128});
  for (int64_t i = 0; i < n; ++i) {
    const double tie = 1 + k(gen) * 0x1p-10 + 0x1p-11;
    e.set(i, tie);
    g.set(i, round_to(DType::kF16, tie + unit(gen) * 0x1p-14, Rounding::kHalfAway));
  }
  OutputCheck c = fp16_bound();
  c.rounding = Rounding::kHalfAway;
  const CompareResult r = compare_output(c, e, g, Tensor::full(DType::kF64, {128, 128}, 0x1p-14), Tensor());
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_EQ(r.metrics.balance_pos + r.metrics.balance_neg, 0);
}

// An attention-like fp16 output: H heads of D channels, four heads to a row of the tensor (a BSH
// layout), channel d centred on a bias b_d in [-2, 2] shared by every head (outputs of both signs).
// The allowance is 2^-11 |e|, about half an fp16 ulp relative.
struct Heads {
  Tensor expected, magnitude, correlated, truncating;
};
constexpr int64_t kHeads = 256, kD = 64, kRow = 4 * kD;
Heads heads(uint32_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0), fraction(0.0, 1.0);
  const Shape shape{kHeads / 4, kRow};
  Heads h{Tensor::zeros(DType::kF64, shape), Tensor::zeros(DType::kF64, shape), Tensor::zeros(DType::kF16, shape),
          Tensor::zeros(DType::kF16, shape)};
  std::vector<double> bias(static_cast<size_t>(kD));
  for (auto& b : bias) b = 2 * unit(gen);
  for (int64_t head = 0; head < kHeads; ++head) {
    // Correct but correlated: one relative error per head (a softmax denominator, <= 2^-12),
    // plus an independent one per element (<= 2^-12): within the allowance.
    const double shared = unit(gen) * 0x1p-12;
    for (int64_t d = 0; d < kD; ++d) {
      const int64_t i = head * kD + d;
      const double e = bias[static_cast<size_t>(d)] + 0.25 * unit(gen);
      h.expected.set(i, e);
      h.magnitude.set(i, std::fabs(e) * 0x1p-11);
      h.correlated.set(i, round_to(DType::kF16, e * (1 + shared + unit(gen) * 0x1p-12)));
      // Defective: a truncated intermediate shrinks every value by a relative [0, 2^-11) (a
      // truncating P cast), within the allowance but always toward zero.
      h.truncating.set(i, round_to(DType::kF16, e * (1 - fraction(gen) * 0x1p-11)));
    }
  }
  return h;
}

OutputCheck head_bound() {
  OutputCheck c = fp16_bound();
  c.balance_cluster = kD;
  return c;
}

TEST(ErrorBalance, errors_shared_inside_a_declared_cluster_are_no_false_alarm) {
  int beyond_independent_limit = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const Heads h = heads(seed);
    const CompareResult r = compare_output(head_bound(), h.expected, h.correlated, h.magnitude, Tensor());
    EXPECT_TRUE(r.passed) << "seed " << seed << ": " << r.message;
    EXPECT_EQ(r.metrics.mismatches, 0) << "seed " << seed;
    const double n = static_cast<double>(r.metrics.balance_pos + r.metrics.balance_neg);
    beyond_independent_limit += std::fabs(static_cast<double>(r.metrics.balance_away - r.metrics.balance_toward)) >
                                ErrorBalance::kZ * std::sqrt(n);
  }
  // Judged as independent elements some of these correct outputs would fail: the heads are what
  // keeps the correlated kernel green.
  EXPECT_GT(beyond_independent_limit, 0);
}

TEST(ErrorBalance, a_truncation_on_outputs_of_both_signs_fails_through_the_magnitude_direction) {
  int signed_alone_would_fail = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const Heads h = heads(seed);
    const CompareResult r = compare_output(head_bound(), h.expected, h.truncating, h.magnitude, Tensor());
    EXPECT_EQ(r.metrics.mismatches, 0) << "seed " << seed;  // invisible elementwise
    EXPECT_FALSE(r.passed) << "seed " << seed << ": " << r.message;
    EXPECT_GT(r.metrics.balance_toward, 4 * r.metrics.balance_away) << "seed " << seed;
    signed_alone_would_fail +=
        std::fabs(static_cast<double>(r.metrics.balance_pos - r.metrics.balance_neg)) > r.metrics.balance_limit;
  }
  // The bias of b_d in [-2, 2] leaves the signed counts within the limit on most seeds.
  EXPECT_LT(signed_alone_would_fail, 20);
}

}  // namespace
}  // namespace opgate
