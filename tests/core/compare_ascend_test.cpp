// Ascend's standards inside the comparator (issue 25): as the gate (run --standard), as the verdicts
// reported beside the gate, the effective-bits metric, and the vacuity check under each gate.
// Every expected value is hand arithmetic on values the dtypes hold exactly.
#include "core/compare.h"
#include "tests/core/compare_testing.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace opgate {
namespace {

using namespace compare_testing;  // NOLINT(google-build-using-namespace): test helpers

OutputCheck gated(DType t, Standard s, OpClass c = OpClass::kComputeFloat, int64_t acc = 10) {
  OutputCheck check = tolerance(t, s);
  check.op_class = c;
  check.accumulations = acc;
  return check;
}

const StandardVerdict& verdict(const CompareResult& r, const std::string& name) {
  for (const StandardResult& s : r.standards) {
    if (s.name == name) return s.verdict;
  }
  ADD_FAILURE() << "no standard " << name;
  static const StandardVerdict none;
  return none;
}

// n copies of `v` with element 0 replaced by `first`.
std::vector<double> filled(size_t n, double v, double first) {
  std::vector<double> out(n, v);
  out[0] = first;
  return out;
}

TEST(CompareAscendV03, fp16_allows_two_to_the_minus_8_of_max_golden_one) {
  const OutputCheck c = gated(DType::kF16, Standard::kAscendV03);
  const Tensor e = f64({1000}, std::vector<double>(1000, 0.5));
  // max(|0.5|, 1) = 1: 0.5 + 2^-8 is at the limit, 0.5 + 2^-8 + 2^-11 (one f16 ulp more) beyond.
  EXPECT_TRUE(compare_output(c, e, of(DType::kF16, {1000}, filled(1000, 0.5, 0.5 + 0x1p-8)), {}, {}).passed);
  EXPECT_FALSE(compare_output(c, e, of(DType::kF16, {1000}, filled(1000, 0.5, 0.5 + 0x1p-8 + 0x1p-11)), {}, {}).passed);
  // At |g| = 64 the limit scales: 64 * 2^-8 = 0.25 (f16 ulp at 64 is 2^-4).
  const Tensor big = f64({1000}, std::vector<double>(1000, 64.0));
  EXPECT_TRUE(compare_output(c, big, of(DType::kF16, {1000}, filled(1000, 64.0, 64.25)), {}, {}).passed);
  EXPECT_FALSE(compare_output(c, big, of(DType::kF16, {1000}, filled(1000, 64.0, 64.3125)), {}, {}).passed);
}

TEST(CompareAscendV03, from_2048_accumulations_one_exponent_looser) {
  const Tensor e = f64({1000}, std::vector<double>(1000, 0.5));
  const Tensor g = of(DType::kF16, {1000}, filled(1000, 0.5, 0.5 + 0x1p-7));  // 2^-7: beyond 2^-8
  EXPECT_FALSE(compare_output(gated(DType::kF16, Standard::kAscendV03, OpClass::kCvFusion, 2047), e, g, {}, {}).passed);
  EXPECT_TRUE(compare_output(gated(DType::kF16, Standard::kAscendV03, OpClass::kCvFusion, 2048), e, g, {}, {}).passed);
}

TEST(CompareAscendV03, a_biased_output_fails_on_its_error_balance) {
  const OutputCheck c = gated(DType::kF16, Standard::kAscendV03);
  const Tensor e = f64({64}, std::vector<double>(64, 1.0));
  // Every element 1 + 2^-9: within 2^-8 each, EB = 2^-9 > 2^-10 (fp16's EB exponent).
  const CompareResult biased = compare_output(c, e, of(DType::kF16, {64}, std::vector<double>(64, 1.0 + 0x1p-9)), {}, {});
  EXPECT_FALSE(biased.passed);
  EXPECT_NE(biased.message.find("error balance"), std::string::npos) << biased.message;
  // Half of them up, half down: EB = 0.
  std::vector<double> mixed(64, 1.0 + 0x1p-9);
  for (size_t i = 0; i < 32; ++i) mixed[i] = 1.0 - 0x1p-9;
  EXPECT_TRUE(compare_output(c, e, of(DType::kF16, {64}, mixed), {}, {}).passed);
}

TEST(CompareAscendV03, an_integer_output_is_within_one_step_of_the_rounded_golden) {
  const OutputCheck c = gated(DType::kI8, Standard::kAscendV03, OpClass::kComputeQuant);
  // 3.4 rounds to 3: 2 and 4 are one step from it (1.4 and 0.6 from the raw value), 1 is two.
  // -130.2 saturates to -128, which is zero steps from the saturated golden.
  const Tensor e = f64({3}, {3.4, 3.4, -130.2});
  EXPECT_TRUE(compare_output(c, e, of(DType::kI8, {3}, {2, 4, -128}), {}, {}).passed);
  EXPECT_FALSE(compare_output(c, e, of(DType::kI8, {3}, {1, 3, -128}), {}, {}).passed);
  // The reported verdict of a bound-gated output agrees.
  OutputCheck bound = tolerance(DType::kI8, Standard::kAllclose);
  bound.tol.atol = 3;  // |-128 - -130.2| = 2.2 within it
  EXPECT_TRUE(verdict(compare_output(bound, e, of(DType::kI8, {3}, {2, 4, -128}), {}, {}), "ascend-v0.3").passed);
  EXPECT_FALSE(verdict(compare_output(bound, e, of(DType::kI8, {3}, {2, 5, -128}), {}, {}), "ascend-v0.3").passed);
}

TEST(CompareAscendDualPermille, fp16_allows_one_in_a_thousand_beyond_five_in_a_thousand) {
  const OutputCheck c = gated(DType::kF16, Standard::kAscendDualPermille);
  const Tensor e = f64({1000}, std::vector<double>(1000, 2.0));
  // rate x max(|2|, 1) = 0.01; 2.015625 (2 + 2^-6) is beyond it, with relative error 0.0078 < 0.1.
  std::vector<double> g(1000, 2.0);
  g[0] = 2.015625;
  EXPECT_TRUE(compare_output(c, e, of(DType::kF16, {1000}, g), {}, {}).passed);  // 1 of 1000 <= 0.001
  g[1] = 2.015625;
  EXPECT_FALSE(compare_output(c, e, of(DType::kF16, {1000}, g), {}, {}).passed);  // 2 of 1000
  // bf16 allows 5 in a thousand: 2 pass there.
  const OutputCheck b = gated(DType::kBF16, Standard::kAscendDualPermille);
  EXPECT_TRUE(compare_output(b, e, of(DType::kBF16, {1000}, g), {}, {}).passed);
}

TEST(CompareAscendDualPermille, one_element_past_the_relative_cap_fails) {
  const OutputCheck c = gated(DType::kBF16, Standard::kAscendDualPermille);
  const Tensor e = f64({1000}, std::vector<double>(1000, 2.0));
  // |2.25 - 2| / max(2.25, 2, 2^-14 / 0.005) = 0.111 >= 0.1, one element (within the 5 share).
  const CompareResult r = compare_output(c, e, of(DType::kBF16, {1000}, filled(1000, 2.0, 2.25)), {}, {});
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("cap"), std::string::npos) << r.message;
  // 2.125: 0.0588 < 0.1 passes.
  EXPECT_TRUE(compare_output(c, e, of(DType::kBF16, {1000}, filled(1000, 2.0, 2.125)), {}, {}).passed);
}

TEST(CompareAscendReported, every_output_carries_both_verdicts_beside_its_gate) {
  OutputCheck c = tolerance(DType::kF16, Standard::kAllclose);
  c.tol.atol = 1;  // a gate wide enough to pass what the standards fail
  const Tensor e = f64({1000}, std::vector<double>(1000, 0.5));
  // 0.5 + 2^-7: beyond v0.3's 2^-8, beyond the rate 0.005 on 1 of 1000 elements (fp16's share), and
  // 2^-7 / (0.5 + 2^-7) = 0.0154 below the cap.
  const CompareResult r = compare_output(c, e, of(DType::kF16, {1000}, filled(1000, 0.5, 0.5 + 0x1p-7)), {}, {});
  EXPECT_TRUE(r.passed);
  EXPECT_FALSE(verdict(r, "ascend-v0.3").passed);
  EXPECT_TRUE(verdict(r, "ascend-dual-permille").passed);
  // 0.625: rel 0.125 / 0.625 = 0.2, past the cap.
  const CompareResult capped = compare_output(c, e, of(DType::kF16, {1000}, filled(1000, 0.5, 0.625)), {}, {});
  EXPECT_FALSE(verdict(capped, "ascend-dual-permille").passed);
}

TEST(CompareAscendReported, outputs_outside_the_scope_say_not_applicable) {
  ComparePlan plan{{tolerance(DType::kF16, Standard::kBound), exact(DType::kI32)}};
  scope_ascend_standards(plan, /*realistic_fill=*/false);
  EXPECT_FALSE(plan.outputs[0].standards_na.empty());
  EXPECT_TRUE(plan.outputs[1].standards_na.empty());  // binary equality holds on any fill
  const CompareResult r = compare_output(plan.outputs[0], f64({1}, {1.0}), of(DType::kF16, {1}, {1.0}), {}, {});
  EXPECT_FALSE(verdict(r, "ascend-v0.3").applies);
  EXPECT_FALSE(verdict(r, "ascend-dual-permille").applies);
  // And --standard leaves such an output with its own gate.
  gate_with_standard(plan, Standard::kAscendV03);
  EXPECT_EQ(plan.outputs[0].tol.standard, Standard::kBound);
  ComparePlan realistic{{tolerance(DType::kF16, Standard::kBound)}};
  gate_with_standard(realistic, Standard::kAscendV03);
  EXPECT_EQ(realistic.outputs[0].tol.standard, Standard::kAscendV03);
}

TEST(CompareEffectiveBits, minus_log2_of_the_relative_rms_error) {
  const OutputCheck c = tolerance(DType::kF32, Standard::kMereMare);
  const Tensor e = f64({4}, {1, 1, 1, 1});
  // Every element off by 2^-10: relative RMS 2^-10, 10 bits.
  EXPECT_DOUBLE_EQ(compare_output(c, e, of(DType::kF32, {4}, std::vector<double>(4, 1 + 0x1p-10)), {}, {}).metrics.effective_bits, 10.0);
  // One of four off by 2^-9: sqrt(2^-18 / 4) = 2^-10 again.
  EXPECT_DOUBLE_EQ(compare_output(c, e, of(DType::kF32, {4}, {1 + 0x1p-9, 1, 1, 1}), {}, {}).metrics.effective_bits, 10.0);
  EXPECT_DOUBLE_EQ(compare_output(c, e, of(DType::kF32, {4}, {1, 1, 1, 1}), {}, {}).metrics.effective_bits, 53.0);
}

TEST(CompareAscendVacuity, a_passing_output_is_not_vacuous_under_either_gate) {
  const Tensor e = f64({2000}, std::vector<double>(2000, 0.75));
  const Tensor g = of(DType::kF16, {2000}, std::vector<double>(2000, 0.75));
  for (Standard s : {Standard::kAscendV03, Standard::kAscendDualPermille}) {
    const OutputCheck c = gated(DType::kF16, s);
    const CompareResult r = compare_output(c, e, g, {}, {});
    ASSERT_TRUE(r.passed);
    EXPECT_EQ(vacuity_check(c, e, g, {}, {}, &r), std::nullopt) << standard_name(s);
    EXPECT_EQ(vacuity_check(c, e, g, {}, {}), std::nullopt) << standard_name(s);
  }
}

}  // namespace
}  // namespace opgate
