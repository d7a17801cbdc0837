// The one-rounding `bound`: where [e - acc, e + acc] rounds to one device value only that value
// passes (ties, binade edges, signed zero, overflow, subnormals, int8 saturation, all by hand), and
// a property that it never fails a correct kernel: any x within acc of e, rounded once in the
// check's mode.
#include <cmath>
#include <random>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "core/compare.h"
#include "tests/core/compare_testing.h"

namespace opgate {
namespace {

using namespace compare_testing;  // NOLINT(google-build-using-namespace): test helpers

// A bound with c = 1, u_acc = 1: the magnitude is the accumulation allowance acc itself.
OutputCheck bound(DType t, Rounding r = Rounding::kNearestEven) {
  OutputCheck c;
  c.name = "out";
  c.kind = CheckKind::kTolerance;
  c.device_dtype = t;
  c.rounding = r;
  c.tol.standard = Standard::kBound;
  c.tol.c = 1;
  c.tol.u_acc = 1;
  c.tol.out_ulps = 0.5;
  return c;
}

CompareResult one(const OutputCheck& c, double e, double acc, double g) {
  return compare_output(c, f64({1}, {e}), of(c.device_dtype, {1}, {g}), f64({1}, {acc}), Tensor());
}

TEST(CompareDetermined, a_tie_with_zero_budget_is_decided_by_the_kernels_rounding) {
  // 1 + 2^-11 lies midway between the f16 neighbours 1 and 1 + 2^-10 (even mantissa: 1). Half an
  // ulp reaches both, so only the determined rule tells the rounding modes apart.
  const double tie = 1 + 0x1p-11;
  EXPECT_TRUE(one(bound(DType::kF16), tie, 0, 1.0).passed);
  EXPECT_FALSE(one(bound(DType::kF16), tie, 0, 1 + 0x1p-10).passed);
  EXPECT_TRUE(one(bound(DType::kF16, Rounding::kHalfAway), tie, 0, 1 + 0x1p-10).passed);
  EXPECT_FALSE(one(bound(DType::kF16, Rounding::kHalfAway), tie, 0, 1.0).passed);
  EXPECT_EQ(one(bound(DType::kF16), tie, 0, 1.0).metrics.determined, 1);
}

TEST(CompareDetermined, an_interval_straddling_a_boundary_keeps_both_neighbours) {
  // f16 ulp at 1 is u = 2^-10. e = 1 + 0.49u, acc = 0.02u: [1 + 0.47u, 1 + 0.51u] holds the tie 1 + u/2.
  const double u = 0x1p-10;
  const CompareResult lower = one(bound(DType::kF16), 1 + 0.49 * u, 0.02 * u, 1.0);
  EXPECT_TRUE(lower.passed);
  EXPECT_EQ(lower.metrics.determined, 0);
  EXPECT_TRUE(one(bound(DType::kF16), 1 + 0.49 * u, 0.02 * u, 1 + u).passed);
  EXPECT_FALSE(one(bound(DType::kF16), 1 + 0.49 * u, 0.02 * u, 1 + 2 * u).passed);
  // e = 1 + 0.3u, acc = 0.1u: [1 + 0.2u, 1 + 0.4u] rounds to 1 alone.
  EXPECT_EQ(one(bound(DType::kF16), 1 + 0.3 * u, 0.1 * u, 1.0).metrics.determined, 1);
  EXPECT_FALSE(one(bound(DType::kF16), 1 + 0.3 * u, 0.1 * u, 1 + u).passed);
}

TEST(CompareDetermined, the_binade_edge_uses_the_spacing_on_each_side) {
  // Below 2 the f16 spacing is 2^-10, above it 2^-9. e = 2 - 2^-12, acc = 2^-12: [2 - 2^-11, 2];
  // 2 - 2^-11 is the tie between 2 - 2^-10 (odd mantissa) and 2 (even), so every x rounds to 2.
  // The plain allowance acc + ulp(2)/2 = 2^-12 + 2^-10 would have let 2 - 2^-10 through.
  const CompareResult r = one(bound(DType::kF16), 2 - 0x1p-12, 0x1p-12, 2.0);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.metrics.determined, 1);
  EXPECT_FALSE(one(bound(DType::kF16), 2 - 0x1p-12, 0x1p-12, 2 - 0x1p-10).passed);
}

TEST(CompareDetermined, signed_zero_either_sign_is_right_near_zero) {
  // e = 0, acc = 2^-30 (f16's smallest subnormal is 2^-24): x in [-2^-30, 2^-30] rounds to -0 or +0.
  EXPECT_TRUE(one(bound(DType::kF16), 0.0, 0x1p-30, -0.0).passed);
  EXPECT_TRUE(one(bound(DType::kF16), 0.0, 0x1p-30, 0.0).passed);
  EXPECT_EQ(one(bound(DType::kF16), 0.0, 0x1p-30, 0.0).metrics.determined, 1);
  EXPECT_FALSE(one(bound(DType::kF16), 0.0, 0x1p-30, 0x1p-24).passed);
}

TEST(CompareDetermined, subnormal_ties_round_like_normal_ones) {
  // 3 * 2^-25 lies midway between the f16 subnormals 2^-24 (odd) and 2^-23 (even).
  EXPECT_TRUE(one(bound(DType::kF16), 3 * 0x1p-25, 0, 0x1p-23).passed);
  EXPECT_FALSE(one(bound(DType::kF16), 3 * 0x1p-25, 0, 0x1p-24).passed);
}

TEST(CompareDetermined, overflow_at_the_dtype_max) {
  // f16 max 65504, spacing 32 there; 65520 is the overflow tie (RNE rounds it to inf).
  // e = 65512, acc = 16: [65496, 65528] rounds to 65504 or inf, and a correct kernel may give either.
  EXPECT_TRUE(one(bound(DType::kF16), 65512, 16, 65504).passed);
  EXPECT_TRUE(one(bound(DType::kF16), 65512, 16, INFINITY).passed);
  EXPECT_FALSE(one(bound(DType::kF16), 65512, 16, -INFINITY).passed);
  // Without a budget 65512 rounds to 65504 alone; 70000 to inf alone.
  EXPECT_FALSE(one(bound(DType::kF16), 65512, 0, INFINITY).passed);
  EXPECT_TRUE(one(bound(DType::kF16), 70000, 0, INFINITY).passed);
  EXPECT_FALSE(one(bound(DType::kF16), 70000, 0, 65504).passed);
}

TEST(CompareDetermined, int8_output_rounds_and_saturates_like_the_kernels_cast) {
  // IFA's int8 attentionOut is a bound in int8 units: CAST_RINT per tensor, CAST_ROUND per channel.
  EXPECT_TRUE(one(bound(DType::kI8), 2.5, 0, 2).passed);
  EXPECT_FALSE(one(bound(DType::kI8), 2.5, 0, 3).passed);
  EXPECT_TRUE(one(bound(DType::kI8, Rounding::kHalfAway), 2.5, 0, 3).passed);
  EXPECT_FALSE(one(bound(DType::kI8, Rounding::kHalfAway), 2.5, 0, 2).passed);
  // [125.7, 127.7] -> 126 or 127 (saturated); [199, 201] -> 127 only.
  EXPECT_TRUE(one(bound(DType::kI8), 126.7, 1, 126).passed);
  EXPECT_TRUE(one(bound(DType::kI8), 126.7, 1, 127).passed);
  EXPECT_FALSE(one(bound(DType::kI8), 126.7, 1, 125).passed);
  const CompareResult sat = one(bound(DType::kI8), 200, 1, 127);
  EXPECT_TRUE(sat.passed);
  EXPECT_EQ(sat.metrics.determined, 1);
}

TEST(CompareDetermined, a_bound_with_a_wider_output_term_keeps_the_plain_allowance) {
  // out_ulps = 1 does not promise one rounding in the check's mode: |got - e| <= 1 ulp, nothing determined.
  OutputCheck c = bound(DType::kF16);
  c.tol.out_ulps = 1;
  const CompareResult r = one(c, 1 + 0x1p-11, 0, 1 + 0x1p-10);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.metrics.determined, 0);
}

TEST(CompareDetermined, exact_outputs_count_every_element_as_determined) {
  OutputCheck c;
  c.name = "out";
  c.kind = CheckKind::kExact;
  c.device_dtype = DType::kF32;
  EXPECT_EQ(compare_output(c, f64({3}, {1, 2, 3}), of(DType::kF32, {3}, {1, 2, 3}), Tensor(), Tensor()).metrics.determined,
            3);
}

// A correct kernel: its pre-rounding value lies within acc of the reference, and it rounds once
// with the check's mode. The comparison must pass, wherever e sits (ties, binade edges, zero,
// subnormals, the dtype's max and beyond).
RC_GTEST_PROP(CompareDeterminedProps, a_correct_kernel_always_passes, ()) {
  const DType t = *rc::gen::element(DType::kF16, DType::kBF16, DType::kF32, DType::kI8);
  const Rounding r = *rc::gen::element(Rounding::kNearestEven, Rounding::kHalfAway, Rounding::kTowardZero);
  const double spacing_at_one = is_floating(t) ? epsilon(t) : 1.0;
  // e near an interesting point: a tie or representable value, plus a few spacings' offset.
  const double anchor = *rc::gen::element(0.0, 1.0, 2.0, 3.0, 100.5, -7.25, 126.5, 65504.0, -65520.0,
                                          0x1p-24, 3 * 0x1p-25, 0x1p-126, 3.0e38, 2.5);
  const int quarter_steps = *rc::gen::inRange(-8, 9);
  const double e = anchor + quarter_steps * 0.25 * spacing_at_one * std::max(1.0, std::fabs(anchor) * (is_floating(t) ? 1.0 : 0.0));
  const double acc = *rc::gen::element(0.0, 0.1, 0.5, 1.0, 3.0) * spacing_at_one *
                     std::max(1.0, is_floating(t) ? std::fabs(e) : 1.0) *
                     (*rc::gen::element(1.0, 1e-3, 1e-6));
  const double where = *rc::gen::element(-1.0, -0.999, -0.5, 0.0, 0.5, 0.999, 1.0);
  const double x = e + where * acc;
  const double g = round_to(t, x, r);
  OutputCheck c = bound(t, r);
  const CompareResult res = compare_output(c, f64({1}, {e}), of(t, {1}, {g}), f64({1}, {acc}), Tensor());
  RC_ASSERT(res.passed);
}

}  // namespace
}  // namespace opgate
