// Ascend's accuracy standards by hand arithmetic: each threshold, the loosening step at 2048
// accumulations, the per-mille share and its cap, the dual benchmark's ratios and floors, and
// block merging equal to one pass.
#include "core/ascend_standard.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace opgate {
namespace {

AscendStats stats_of(const std::vector<double>& golden, const std::vector<double>& actual, double rate) {
  AscendStats s;
  for (size_t i = 0; i < golden.size(); ++i) s.add(golden[i], actual[i], rate);
  return s;
}

TEST(AscendStandard, v03_exponents_by_dtype_and_the_step_at_2048_accumulations) {
  // fp16 2^-8, bf16 2^-7, fp32 2^-11; one step looser from 2048 terms for fp16 and bf16 only.
  EXPECT_EQ(v03_limits(OpClass::kComputeFloat, DType::kF16, 2047).err, 0.00390625);
  EXPECT_EQ(v03_limits(OpClass::kComputeFloat, DType::kF16, 2048).err, 0.0078125);
  EXPECT_EQ(v03_limits(OpClass::kCvFusion, DType::kBF16, 128 * 16 + 4).err, 0.015625);  // 2052 >= 2048
  EXPECT_EQ(v03_limits(OpClass::kCvFusion, DType::kBF16, 128 * 15 + 4).err, 0.0078125);  // 1924
  EXPECT_EQ(v03_limits(OpClass::kComputeFloat, DType::kF32, 1000000).err, 1.0 / 2048);
  EXPECT_EQ(v03_limits(OpClass::kComputeFloat, DType::kF32, 1000000).loosened, 0);
  // Error balance: bf16 2^-7, fp16 2^-10, fp32 2^-14, never loosened.
  EXPECT_EQ(v03_limits(OpClass::kComputeFloat, DType::kF16, 5000).eb, 1.0 / 1024);
  EXPECT_EQ(v03_limits(OpClass::kComputeFloat, DType::kBF16, 5000).eb, 1.0 / 128);
  EXPECT_EQ(v03_limits(OpClass::kComputeFloat, DType::kF32, 5000).eb, 1.0 / 16384);
  for (OpClass c : {OpClass::kMove, OpClass::kCast, OpClass::kComputeInteger}) {
    EXPECT_TRUE(v03_limits(c, DType::kI32, 0).binary_equal) << op_class_name(c);
  }
  EXPECT_FALSE(judge_v03(AscendStats{}, v03_limits(OpClass::kMove, DType::kI32, 0)).applies);
}

TEST(AscendStandard, v03_element_error_is_scaled_by_the_golden_magnitude_floored_at_one) {
  // Errors 2^-9 at |g| = 0.5 (scaled by 1) and 2^-7 at |g| = 2 (scaled by 2): both 2^-9 and 2^-8.
  const AscendStats s = stats_of({0.5, 2.0, -4.0}, {0.5 + 0x1p-9, 2.0 + 0x1p-7, -4.0}, 0.005);
  EXPECT_EQ(s.max_scaled_err, 0x1p-8);
  // EB = (2^-9 + 2^-8 + 0) / 3 = 2^-9: within bf16's 2^-7, beyond fp16's 2^-10.
  EXPECT_DOUBLE_EQ(s.eb(), 0x1p-9);
  EXPECT_TRUE(judge_v03(s, v03_limits(OpClass::kComputeFloat, DType::kBF16, 10)).passed);
  const StandardVerdict fp16 = judge_v03(s, v03_limits(OpClass::kComputeFloat, DType::kF16, 10));
  EXPECT_FALSE(fp16.passed) << fp16.detail;  // max 2^-8 is at the limit (<=); EB fails
  // A downward bias fails too (|EB|): the mirror image of the case above.
  const AscendStats down = stats_of({0.5, 2.0, -4.0}, {0.5 - 0x1p-9, 2.0 - 0x1p-7, -4.0}, 0.005);
  EXPECT_FALSE(judge_v03(down, v03_limits(OpClass::kComputeFloat, DType::kF16, 10)).passed);
  // One element just past the limit fails however small the mean: 1000 elements, EB ~ 4e-6.
  std::vector<double> g(1000, 1.0), a(1000, 1.0);
  a[7] = 1.0 + 0x1p-8 + 0x1p-20;
  EXPECT_FALSE(judge_v03(stats_of(g, a, 0.005), v03_limits(OpClass::kComputeFloat, DType::kF16, 10)).passed);
  a[7] = 1.0 + 0x1p-8;
  EXPECT_TRUE(judge_v03(stats_of(g, a, 0.005), v03_limits(OpClass::kComputeFloat, DType::kF16, 10)).passed);
}

TEST(AscendStandard, dual_permille_counts_the_share_beyond_the_rate_and_caps_the_relative_error) {
  EXPECT_EQ(dual_permille_for(DType::kF16).share, 0.001);
  EXPECT_EQ(dual_permille_for(DType::kBF16).share, 0.005);
  EXPECT_EQ(dual_permille_for(DType::kI8).share, 0.005);
  std::vector<double> g(1000, 1.0), a(1000, 1.0);
  a[3] = 1.006;  // 0.006 > max(0.005 * 1, 0.005)
  a[4] = 1.005;  // at the limit: not counted (strictly greater counts)
  AscendStats one = stats_of(g, a, 0.005);
  EXPECT_EQ(one.over_rate, 1);
  // Relative error 0.006 / max(1.006, 1, 2^-14 / 0.005 = 0.0122) = 0.005964.
  EXPECT_NEAR(one.max_rel_over, 0.006 / 1.006, 1e-15);
  EXPECT_TRUE(judge_dual_permille(one, dual_permille_for(DType::kF16)).passed);  // 1/1000 <= 0.001
  a[5] = 0.99;
  EXPECT_FALSE(judge_dual_permille(stats_of(g, a, 0.005), dual_permille_for(DType::kF16)).passed);  // 2/1000
  EXPECT_TRUE(judge_dual_permille(stats_of(g, a, 0.005), dual_permille_for(DType::kBF16)).passed);
  // The cap: g = 0, a = 0.5 is one element in 1000 but relative error 0.5 / 0.5 = 1 >= 0.1.
  std::vector<double> g0(1000, 1.0), a0(1000, 1.0);
  g0[0] = 0.0;
  a0[0] = 0.5;
  const AscendStats capped = stats_of(g0, a0, 0.005);
  EXPECT_EQ(capped.max_rel_over, 1.0);
  EXPECT_FALSE(judge_dual_permille(capped, dual_permille_for(DType::kBF16)).passed);
  // Near zero the floor 2^-14 / rate stands in for |g|: g = 0, a = 0.006 gives 0.006 / 0.01220703125.
  g0[0] = 0.0;
  a0[0] = 0.006;
  EXPECT_NEAR(stats_of(g0, a0, 0.005).max_rel_over, 0.006 / (0x1p-14 / 0.005), 1e-15);
}

TEST(AscendStandard, dual_benchmark_ratios_floor_the_twin_error_at_the_class_threshold) {
  // fp16: compute-float floor 2^-8, cv-fusion floor 2^-11; EB limit 2^-10.
  EXPECT_EQ(dual_benchmark_limits(OpClass::kComputeFloat, DType::kF16).floor, 0x1p-8);
  EXPECT_EQ(dual_benchmark_limits(OpClass::kCvFusion, DType::kF16).floor, 0x1p-11);
  EXPECT_EQ(dual_benchmark_limits(OpClass::kCvFusion, DType::kBF16).floor, 0x1p-8);
  const DualBenchmarkLimits cv = dual_benchmark_limits(OpClass::kCvFusion, DType::kF16);
  // MARE 0.004 / max(0.001, 2^-11 = 0.000488) = 4 < 10; MERE 0.0009 / 0.0005 = 1.8 < 2;
  // RMSE 0.001 / 0.0005 = 2, not < 2: fails on RMSE alone.
  const ErrorFigures twin{0.001, 0.0005, 0.0005};
  EXPECT_FALSE(judge_dual_benchmark({0.004, 0.0009, 0.001}, twin, 0.0, cv).passed);
  EXPECT_TRUE(judge_dual_benchmark({0.004, 0.0009, 0.00099}, twin, 0.0, cv).passed);
  // A twin that is exact everywhere: the floor 2^-11 stands in, so the device may have MERE < 2^-10.
  const ErrorFigures exact{0, 0, 0};
  EXPECT_TRUE(judge_dual_benchmark({0.004, 0.0009, 0.0009}, exact, 0.0, cv).passed);
  EXPECT_FALSE(judge_dual_benchmark({0.004, 0.001, 0.0009}, exact, 0.0, cv).passed);  // 2.048
  // The device's bias against the twin: |EB| must stay below 2^-10.
  EXPECT_FALSE(judge_dual_benchmark({0.004, 0.0009, 0.0009}, exact, -0x1p-10, cv).passed);
  EXPECT_TRUE(judge_dual_benchmark({0.004, 0.0009, 0.0009}, exact, -0x1p-11, cv).passed);
}

TEST(AscendStandard, blocks_merged_in_order_equal_one_pass) {
  std::vector<double> g, a;
  for (int i = 0; i < 300; ++i) {
    g.push_back(std::sin(i) * 3);
    a.push_back(std::sin(i) * 3 + (i % 7 == 0 ? 0.02 : 1e-4));
  }
  const AscendStats whole = stats_of(g, a, 0.005);
  AscendStats first, second;
  for (int i = 0; i < 300; ++i) (i < 130 ? first : second).add(g[i], a[i], 0.005);
  first.merge(second);
  EXPECT_EQ(first.n, whole.n);
  EXPECT_EQ(first.over_rate, whole.over_rate);
  EXPECT_EQ(first.max_scaled_err, whole.max_scaled_err);
  EXPECT_EQ(first.max_rel_over, whole.max_rel_over);
  EXPECT_NEAR(first.sum_scaled_signed, whole.sum_scaled_signed, 1e-12);
  EXPECT_GT(whole.over_rate, 0);
}

}  // namespace
}  // namespace opgate
