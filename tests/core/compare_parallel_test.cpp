// The comparator's one pass: blocks merged in order give the same CompareResult at 1, 2 and 7
// threads; the typed fast paths of rounding and ulp agree with the general round_to and ulp on
// every dtype, mode and binade; the vacuity check gives the same verdict from what the pass
// gathered as from its own walk; and the error-balance gate counted in parts equals the whole.
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/compare.h"
#include "core/error_balance.h"
#include "core/parallel.h"
#include "core/result_json.h"
#include "tests/core/compare_testing.h"

namespace opgate {
namespace {

using namespace compare_testing;  // NOLINT(google-build-using-namespace): test helpers

// Restores the default thread count when a test ends.
struct ThreadsGuard {
  ~ThreadsGuard() { math::set_threads(0); }
};

// An output of `rows` x `cols` (several blocks of the pass): expected values over many binades,
// got = expected rounded, with a sparse set of elements moved by one or more ulps.
struct Sample {
  Tensor expected, got, magnitude, care;
};
Sample sample(DType t, int64_t rows, int64_t cols, uint32_t seed, bool with_care) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> binade(-20, 12);
  Sample s;
  s.expected = Tensor::zeros(DType::kF64, {rows, cols});
  s.got = Tensor::zeros(t, {rows, cols});
  s.magnitude = Tensor::zeros(DType::kF64, {rows, cols});
  s.care = Tensor::zeros(DType::kU8, {rows, cols});
  for (int64_t i = 0; i < rows * cols; ++i) {
    const double e = std::ldexp(unit(rng), binade(rng));
    s.expected.set(i, e);
    s.magnitude.set(i, std::fabs(e) * 4);
    double g = round_to(t, e);
    const uint64_t roll = rng() % 1000;
    if (roll < 3) g += ulp(t, g) * static_cast<double>(1 + roll);  // off by 1 to 3 ulps
    s.got.set(i, g);
    s.care.set(i, with_care && i % 977 == 5 ? 0 : 1);
  }
  return s;
}

OutputCheck bound(DType t) {
  OutputCheck c = tolerance(t, Standard::kBound);
  c.tol.c = 8;
  c.tol.u_acc = 0x1p-24;
  return c;
}

std::string json_at(int threads, const OutputCheck& c, const Sample& s, bool care) {
  math::set_threads(threads);
  return to_json(compare_output(c, s.expected, s.got, s.magnitude, care ? s.care : Tensor())).dump();
}

TEST(CompareParallel, result_is_identical_at_1_2_and_7_threads) {
  ThreadsGuard restore;
  // 300 x 700 = 210000 elements: four blocks of the pass, rows straddling the block boundaries.
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32}) {
    const Sample s = sample(t, 300, 700, 7, true);
    for (const OutputCheck& c : {bound(t), exact(t), tolerance(t, Standard::kMereMare)}) {
      for (bool care : {false, true}) {
        const std::string one = json_at(1, c, s, care);
        EXPECT_EQ(one, json_at(2, c, s, care)) << dtype_name(t) << " " << c.tol.c;
        EXPECT_EQ(one, json_at(7, c, s, care)) << dtype_name(t) << " " << c.tol.c;
      }
    }
  }
}

TEST(CompareParallel, counts_do_not_depend_on_the_blocks) {
  // The counted metrics of a multi-block output equal those summed over its rows compared one by
  // one (each row far smaller than a block). 800 000 elements are 13 blocks: at one thread the pass
  // runs them in two waves (8 blocks at a time), so a wave step that skipped a block shows here.
  ThreadsGuard restore;
  math::set_threads(1);
  constexpr int64_t kRows = 800;
  const Sample s = sample(DType::kBF16, kRows, 1000, 3, false);
  const CompareResult whole = compare_output(exact(DType::kBF16), s.expected, s.got, Tensor(), Tensor());
  int64_t mismatches = 0, compared = 0;
  std::array<int64_t, 8> hist{};
  double max_ulp = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    Tensor e = Tensor::zeros(DType::kF64, {1000});
    Tensor g = Tensor::zeros(DType::kBF16, {1000});
    for (int64_t j = 0; j < 1000; ++j) {
      e.set(j, s.expected.get(r * 1000 + j));
      g.set_bits(j, s.got.bits(r * 1000 + j));
    }
    const CompareResult row = compare_output(exact(DType::kBF16), e, g, Tensor(), Tensor());
    mismatches += row.metrics.mismatches;
    compared += row.metrics.compared;
    for (size_t k = 0; k < hist.size(); ++k) hist[k] += row.metrics.ulp_hist[k];
    max_ulp = std::max(max_ulp, row.metrics.max_ulp);
  }
  EXPECT_EQ(whole.metrics.compared, kRows * 1000);
  EXPECT_EQ(whole.metrics.compared, compared);
  EXPECT_EQ(whole.metrics.mismatches, mismatches);
  EXPECT_GT(mismatches, 0);
  EXPECT_EQ(whole.metrics.ulp_hist, hist);
  EXPECT_EQ(whole.metrics.max_ulp, max_ulp);
  EXPECT_EQ(whole.first_failures.size(), 10u);
  EXPECT_EQ(whole.worst.size(), 10u);
  for (size_t k = 1; k < whole.first_failures.size(); ++k) {
    EXPECT_LT(whole.first_failures[k - 1].flat, whole.first_failures[k].flat);
  }
}

// Values around every kind of rounding boundary of `t`: normal values, exact ties between two
// neighbours, the subnormal range, zero, the largest finite value and beyond it.
std::vector<double> boundary_values(DType t, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(1.0, 2.0);
  std::vector<double> v;
  const double max = max_finite(t);
  for (int e : {-140, -130, -126, -125, -30, -24, -15, -14, -13, -1, 0, 1, 7, 14, 15, 16, 100, 127}) {
    for (int k = 0; k < 6; ++k) {
      const double x = std::ldexp(unit(rng), e);
      const double lo = round_to(t, x, Rounding::kTowardZero);
      for (double y : {x, lo, lo + ulp(t, lo) / 2, lo + ulp(t, lo) * 0.75}) {
        v.push_back(y);
        v.push_back(-y);
      }
    }
  }
  for (double y : {0.0, max, max + ulp(t, max) / 2, max + ulp(t, max) / 4, max * 1.0001}) {
    v.push_back(y);
    v.push_back(-y);
  }
  return v;
}

TEST(CompareParallel, exact_check_accepts_round_to_of_every_value_in_every_mode) {
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (Rounding r : {Rounding::kNearestEven, Rounding::kHalfAway, Rounding::kTowardZero}) {
      const std::vector<double> values = boundary_values(t, 11);
      const auto n = static_cast<int64_t>(values.size());
      Tensor e = Tensor::zeros(DType::kF64, {n});
      Tensor g = Tensor::zeros(t, {n});
      for (int64_t i = 0; i < n; ++i) {
        e.set(i, values[static_cast<size_t>(i)]);
        g.set(i, round_to(t, values[static_cast<size_t>(i)], r), r);
      }
      const CompareResult ok = compare_output(exact(t, r), e, g, Tensor(), Tensor());
      EXPECT_TRUE(ok.passed) << dtype_name(t) << " mode " << static_cast<int>(r) << ": " << ok.message;
      EXPECT_EQ(ok.metrics.max_ulp, 0);
      // Each finite result moved one ulp away from zero fails, and counts one ulp.
      int64_t moved = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double x = g.get(i);
        if (!std::isfinite(x) || std::fabs(x) >= max_finite(t)) continue;
        Tensor h = g.clone();
        h.set(i, x + std::copysign(ulp(t, x), x == 0 ? 1.0 : x));
        const CompareResult bad = compare_output(exact(t, r), e, h, Tensor(), Tensor());
        EXPECT_EQ(bad.metrics.mismatches, 1) << dtype_name(t) << " at " << values[static_cast<size_t>(i)];
        EXPECT_EQ(bad.metrics.max_ulp, 1) << dtype_name(t) << " at " << values[static_cast<size_t>(i)];
        ++moved;
      }
      EXPECT_GT(moved, n / 2);
    }
  }
}

TEST(CompareParallel, one_rounding_bound_interval_is_round_to_of_its_ends) {
  // With acc = c * u_acc * mag, the accepted values are [round(e - acc), round(e + acc)]: the ends
  // computed here with round_to pass, their outer neighbours fail.
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (Rounding r : {Rounding::kNearestEven, Rounding::kTowardZero}) {
      OutputCheck c = bound(t);
      c.rounding = r;
      for (double x : boundary_values(t, 5)) {
        const double mag = std::fabs(x) * 3;
        const double acc = c.tol.c * c.tol.u_acc * mag;
        const double lo = round_to(t, x - acc, r), hi = round_to(t, x + acc, r);
        if (!std::isfinite(lo) || !std::isfinite(hi) || std::fabs(lo) >= max_finite(t) ||
            std::fabs(hi) >= max_finite(t)) {
          continue;
        }
        const Tensor e = f64({1}, {x});
        const Tensor m = f64({1}, {mag});
        for (double g : {lo, hi}) {
          EXPECT_TRUE(compare_output(c, e, of(t, {1}, {g}), m, Tensor()).passed) << x << " " << g;
        }
        const double below = lo - ulp(t, std::nextafter(lo, -INFINITY));
        const double above = hi + ulp(t, hi);
        EXPECT_FALSE(compare_output(c, e, of(t, {1}, {round_to(t, below)}), m, Tensor()).passed) << x;
        EXPECT_FALSE(compare_output(c, e, of(t, {1}, {round_to(t, above)}), m, Tensor()).passed) << x;
      }
    }
  }
}

// The vacuity verdict from the pass's gathered inputs equals the one from vacuity_check's own walk.
void expect_same_vacuity(const OutputCheck& c, const Tensor& e, const Tensor& g, const Tensor& mag,
                         const Tensor& care) {
  const CompareResult r = compare_output(c, e, g, mag, care);
  ASSERT_TRUE(r.vacuity.ready);
  CompareResult walked = r;
  walked.vacuity = VacuityInputs{};
  const auto from_pass = vacuity_check(c, e, g, mag, care, &r);
  EXPECT_EQ(from_pass, vacuity_check(c, e, g, mag, care, &walked));
  EXPECT_EQ(from_pass, vacuity_check(c, e, g, mag, care, nullptr));
}

TEST(CompareParallel, vacuity_from_the_pass_equals_its_own_walk) {
  ThreadsGuard restore;
  math::set_threads(2);
  // Largest |expected| across blocks, ties by lower index (equal values everywhere).
  const Sample s = sample(DType::kBF16, 200, 700, 9, true);
  for (bool with_care : {false, true}) {
    const Tensor care = with_care ? s.care : Tensor();
    Tensor got = Tensor::zeros(DType::kBF16, {200, 700});
    for (int64_t i = 0; i < got.numel(); ++i) got.set(i, round_to(DType::kBF16, s.expected.get(i)));
    expect_same_vacuity(exact(DType::kBF16), s.expected, got, Tensor(), care);
    expect_same_vacuity(bound(DType::kBF16), s.expected, got, s.magnitude, care);
    OutputCheck allclose = tolerance(DType::kBF16, Standard::kAllclose);
    allclose.tol.rtol = 0.01;
    allclose.tol.max_bad_fraction = 0.003;  // 420 elements may fail: the candidates span blocks
    expect_same_vacuity(allclose, s.expected, got, Tensor(), care);
    expect_same_vacuity(tolerance(DType::kBF16, Standard::kDualThousandth), s.expected, got, Tensor(), care);
  }
  // Equal values: the perturbed elements are the first ones by index.
  const Tensor flat_e = Tensor::full(DType::kF64, {300, 500}, 2.0);
  const Tensor flat_g = Tensor::full(DType::kBF16, {300, 500}, 2.0);
  OutputCheck few = tolerance(DType::kBF16, Standard::kAllclose);
  few.tol.rtol = 0.01;
  few.tol.max_bad_fraction = 0.001;
  expect_same_vacuity(few, flat_e, flat_g, Tensor(), Tensor());
  // Every row equal: no swap to try. Rows equal up to one far row: the swap uses that row.
  expect_same_vacuity(exact(DType::kBF16), flat_e, flat_g, Tensor(), Tensor());
  Tensor one_row_e = flat_e.clone();
  one_row_e.set(290 * 500 + 499, 3.0);
  Tensor one_row_g = flat_g.clone();
  one_row_g.set(290 * 500 + 499, 3.0);
  expect_same_vacuity(exact(DType::kBF16), one_row_e, one_row_g, Tensor(), Tensor());
  EXPECT_EQ(vacuity_check(exact(DType::kBF16), one_row_e, one_row_g, Tensor(), Tensor()), std::nullopt);
  // The differing row is not fully cared: the next differing, fully cared row is found.
  Tensor care = Tensor::full(DType::kU8, {300, 500}, 1);
  care.set(0, 0);           // row 0 is not fully cared: row0 = 1
  care.set(290 * 500, 0);   // row 290 differs but is not fully cared
  Tensor two_e = one_row_e.clone();
  Tensor two_g = one_row_g.clone();
  two_e.set(295 * 500, 5.0);
  two_g.set(295 * 500, 5.0);
  expect_same_vacuity(exact(DType::kBF16), two_e, two_g, Tensor(), care);
  const CompareResult r = compare_output(exact(DType::kBF16), two_e, two_g, Tensor(), care);
  EXPECT_EQ(r.vacuity.row0, 1);
  EXPECT_EQ(r.vacuity.row_differs, 290);
}

TEST(CompareParallel, error_balance_counted_in_parts_equals_the_whole) {
  // Errors on every third element and in the first two columns, with a sign pattern: more than 45
  // rows and columns, so the limit is finite, and set by the columns (120 rows share 64 columns).
  // Parts of several sizes (smaller and larger than a row, aligned to it or not) absorbed in order,
  // after a first stretch added directly, give the whole's counts and limit, and the limit is the
  // one of the counts summed here.
  const int64_t rows = 120, width = 64, numel = rows * width;
  auto erred = [&](int64_t i) { return i % 3 == 0 || i % width < 2; };
  auto sign = [&](int64_t i) { return (i / width) % 4 == 0 ? -1 : 1; };
  auto away = [&](int64_t i) { return i % 5 == 0 ? 0 : 1; };
  for (int64_t cluster : {int64_t{0}, int64_t{7}}) {
    ErrorBalance whole(numel, width, cluster);
    for (int64_t i = 0; i < numel; ++i) {
      if (erred(i)) whole.add(i, sign(i), away(i));
    }
    for (int64_t part : {int64_t{1}, int64_t{10}, int64_t{64}, int64_t{100}, int64_t{301}, numel}) {
      ErrorBalance merged(numel, width, cluster);
      const int64_t direct = 30;  // added to the whole's gate itself, before the parts
      for (int64_t i = 0; i < direct; ++i) {
        if (erred(i)) merged.add(i, sign(i), away(i));
      }
      for (int64_t b = direct; b < numel; b += part) {
        const int64_t e = std::min(numel, b + part);
        ErrorBalance p(numel, width, cluster, b, e);
        for (int64_t i = b; i < e; ++i) {
          if (erred(i)) p.add(i, sign(i), away(i));
        }
        merged.absorb(p);
      }
      const ErrorBalance::Verdict a = whole.verdict(), b = merged.verdict();
      EXPECT_EQ(a.n_pos, b.n_pos);
      EXPECT_EQ(a.n_neg, b.n_neg);
      EXPECT_EQ(a.n_away, b.n_away);
      EXPECT_EQ(a.n_toward, b.n_toward);
      EXPECT_EQ(a.limit, b.limit) << "part " << part << " cluster " << cluster;
      EXPECT_EQ(a.balanced, b.balanced);
    }
    // The limit from the counts per row (cluster) and per column, summed here.
    std::vector<double> runs(static_cast<size_t>(numel), 0.0), cols(static_cast<size_t>(width), 0.0);
    double n = 0;
    for (int64_t i = 0; i < numel; ++i) {
      if (!erred(i)) continue;
      runs[static_cast<size_t>(i / (cluster > 0 ? cluster : width))] += 1;
      cols[static_cast<size_t>(i % width)] += 1;
      n += 1;
    }
    double run_sq = 0, col_sq = 0;
    for (double c : runs) run_sq += c * c;
    for (double c : cols) col_sq += c * c;
    const double limit = ErrorBalance::kZ * std::sqrt(cluster > 0 ? run_sq : std::max(run_sq, col_sq));
    ASSERT_LT(limit, n);
    EXPECT_EQ(whole.verdict().limit, limit) << "cluster " << cluster;
  }
}

}  // namespace
}  // namespace opgate

namespace opgate {
namespace {

TEST(CompareParallel, vacuity_perturbs_the_largest_expected_value_first) {
  // allclose with 0.5 % bad allowed: 5 of 1000 elements bound the candidates gathered, but only
  // 100 are cared, so one bad element fails (needed = 1). An allowance of rtol 1000 at 1e36 is
  // wider than bf16's range (any value passes there), at 1 + i/128 it is not.
  OutputCheck c = tolerance(DType::kBF16, Standard::kAllclose);
  c.tol.rtol = 1000;
  c.tol.max_bad_fraction = 0.005;
  for (int64_t pos = 0; pos < 100; pos += 7) {
    // (a) One wide element, the largest: it is passed over and the next one, moved out of its
    // tolerance, fails, so the comparison is not vacuous.
    // (b) Every element wide: vacuous, and the example named is the largest |expected| (2e36),
    // the first candidate tried.
    for (const bool all_wide : {false, true}) {
      Tensor e = Tensor::zeros(DType::kF64, {1000});
      Tensor care = Tensor::zeros(DType::kU8, {1000});
      for (int64_t i = 0; i < 100; ++i) {
        const double other = all_wide ? 1e36 + static_cast<double>(i) * 1e33 : 1 + static_cast<double>(i) / 128;
        e.set(i * 10, i == pos ? 2e36 : other);
        care.set(i * 10, 1);
      }
      const Tensor g = e.converted(DType::kBF16);
      const CompareResult r = compare_output(c, e, g, Tensor(), care);
      ASSERT_TRUE(r.passed);
      for (const CompareResult* original : {&r, static_cast<const CompareResult*>(nullptr)}) {
        const auto why = vacuity_check(c, e, g, Tensor(), care, original);
        if (!all_wide) {
          EXPECT_FALSE(why.has_value()) << "pos " << pos << ": " << *why;
          continue;
        }
        ASSERT_TRUE(why.has_value()) << "pos " << pos;
        EXPECT_NE(why->find("100 of 100 compared element(s) have a tolerance wider"), std::string::npos) << *why;
        EXPECT_NE(why->find("e.g. element [" + std::to_string(pos * 10) + "] has tolerance"), std::string::npos)
            << *why;
      }
    }
  }
}

}  // namespace
}  // namespace opgate
