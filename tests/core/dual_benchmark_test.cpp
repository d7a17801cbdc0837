// The dual-benchmark standard of one output (core/dual_benchmark.h), by hand arithmetic: ratios of
// the device's MARE, MERE and RMSE to the twin's, the twin's floor at the class threshold, the
// error balance from the twin, and where the standard does not apply.
#include "core/dual_benchmark.h"
#include "tests/core/compare_testing.h"

#include <vector>

#include <gtest/gtest.h>

namespace opgate {
namespace {

using namespace compare_testing;  // NOLINT(google-build-using-namespace): test helpers

OutputCheck check_of(OpClass c) {
  OutputCheck k = tolerance(DType::kF16, Standard::kBound);
  k.op_class = c;
  return k;
}

StandardVerdict judge(const OutputCheck& c, double device_value, double twin_value) {
  const Tensor e = f64({8}, std::vector<double>(8, 1.0));
  const Tensor got = of(DType::kF16, {8}, std::vector<double>(8, device_value));
  const Tensor twin = of(DType::kF16, {8}, std::vector<double>(8, twin_value));
  return dual_benchmark_output(c, compare_output(c, e, got, {}, {}), e, got, twin, {}, {});
}

TEST(DualBenchmark, equal_errors_pass_and_sixteen_times_the_twins_fail) {
  const OutputCheck c = check_of(OpClass::kComputeFloat);
  // Twin and device both 2^-10 off: every ratio 1, EB from the twin 0.
  EXPECT_TRUE(judge(c, 1 + 0x1p-10, 1 + 0x1p-10).passed);
  // Device 2^-6 off against the twin's 2^-10: MARE ratio 16 >= 10.
  EXPECT_FALSE(judge(c, 1 + 0x1p-6, 1 + 0x1p-10).passed);
}

// Golden and twin 0.5 everywhere, the device alternately 0.5 + d and 0.5 - d: its EB from the twin
// is 0, its relative errors d / (0.5 + 1e-7) (MIN_ERR), its RMSE d.
StandardVerdict judge_alternating(OpClass cls, double d) {
  const OutputCheck c = check_of(cls);
  const Tensor e = f64({8}, std::vector<double>(8, 0.5));
  std::vector<double> dev(8);
  for (size_t i = 0; i < dev.size(); ++i) dev[i] = i % 2 == 0 ? 0.5 + d : 0.5 - d;
  const Tensor got = of(DType::kF16, {8}, dev);
  const Tensor twin = of(DType::kF16, {8}, std::vector<double>(8, 0.5));
  return dual_benchmark_output(c, compare_output(c, e, got, {}, {}), e, got, twin, {}, {});
}

TEST(DualBenchmark, an_exact_twin_counts_as_the_class_threshold) {
  // compute-float fp16 floors the twin's error at 2^-8: d = 2^-10 gives MARE and MERE ratios
  // 2^-9 / 2^-8 = 1/2 (a hair less), RMSE 1/4.
  EXPECT_TRUE(judge_alternating(OpClass::kComputeFloat, 0x1p-10).passed);
  // cv-fusion fp16 floors at 2^-11: the same device has MERE ratio 4 (>= 2) ...
  EXPECT_FALSE(judge_alternating(OpClass::kCvFusion, 0x1p-10).passed);
  // ... and at d = 2^-11, 2 / (1 + 2e-7) = 1.9999996 < 2 passes.
  EXPECT_TRUE(judge_alternating(OpClass::kCvFusion, 0x1p-11).passed);
  // A device biased by 2^-10 at 1 against an exact twin: EB 2^-10, and |EB| < 2^-10 is strict.
  EXPECT_FALSE(judge(check_of(OpClass::kComputeFloat), 1 + 0x1p-10, 1.0).passed);
}

TEST(DualBenchmark, the_error_balance_is_measured_from_the_twin) {
  const Tensor got = of(DType::kF16, {4}, {2.0, 0.5, 1.0, 1.0});
  const Tensor twin = of(DType::kF16, {4}, {1.0, 0.25, 1.0, 3.0});
  // (2 - 1) / 1 + (0.5 - 0.25) / 1 + 0 + (1 - 3) / 3 = 1.25 - 0.6667 = 0.5833, over 4 elements.
  EXPECT_NEAR(error_balance_against(got, twin, {}), (1.25 - 2.0 / 3.0) / 4, 1e-15);
  const Tensor care = of(DType::kU8, {4}, {1, 1, 1, 0});
  EXPECT_NEAR(error_balance_against(got, twin, care), 1.25 / 3, 1e-15);
}

TEST(DualBenchmark, exact_integer_and_out_of_scope_outputs_are_not_judged) {
  const Tensor e = f64({2}, {1, 2});
  const Tensor g = of(DType::kF16, {2}, {1, 2});
  const OutputCheck x = exact(DType::kF16);
  EXPECT_FALSE(dual_benchmark_output(x, compare_output(x, e, g, {}, {}), e, g, g, {}, {}).applies);
  const OutputCheck i8 = tolerance(DType::kI8, Standard::kBound);
  const Tensor gi = of(DType::kI8, {2}, {1, 2});
  EXPECT_FALSE(dual_benchmark_output(i8, compare_output(i8, e, gi, {}, {}), e, gi, gi, {}, {}).applies);
  OutputCheck na = check_of(OpClass::kComputeFloat);
  na.standards_na = "a chosen fill";
  const StandardVerdict v = dual_benchmark_output(na, compare_output(na, e, g, {}, {}), e, g, g, {}, {});
  EXPECT_FALSE(v.applies);
  EXPECT_NE(v.detail.find("a chosen fill"), std::string::npos);
}

}  // namespace
}  // namespace opgate
