// The sparkline's scale and its marks; the adapter from CaseResult.
#include "history/history_format.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "history/history_from_result.h"

namespace opgate::history {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(HistorySparkline, EightStepsFromTheSmallestToTheLargest) {
  EXPECT_EQ(sparkline({0, 1, 2, 3, 4, 5, 6, 7}, std::vector<bool>(8, true)), "▁▂▃▄▅▆▇█");
  // Scaled to [10, 24]: 17 is (17 - 10) / 14 * 7 = 3.5, rounded away to 4.
  EXPECT_EQ(sparkline({10, 24, 17}, {true, true, true}), "▁█▅");
}

TEST(HistorySparkline, FlatMissingAndNonFinite) {
  EXPECT_EQ(sparkline({2, 2}, {true, true}), "▄▄");
  EXPECT_EQ(sparkline({0, 0}, {true, true}), "▁▁");
  EXPECT_EQ(sparkline({1, 0, kNaN, kInf, 3}, {true, false, true, true, true}), "▁ ?^█");
}

TEST(HistoryFromResult, OutputsMetricsAndNonFiniteStrings) {
  CaseResult r;
  r.id = "mffn.x.f16.001";
  r.op = "moe_ffn";
  r.tier = "ci";
  r.verdict = Verdict::kFailed;
  r.reason = "y: 1 of 4 outside bound";
  r.total_ms = 12.5;
  OutputResult y_out;
  y_out.compare.name = "y";
  y_out.compare.standard = "bound";
  y_out.compare.passed = false;
  y_out.compare.metrics.max_abs = 1.5;
  y_out.compare.metrics.budget_used = kInf;
  y_out.compare.metrics.cosine = kNaN;
  y_out.compare.metrics.max_rel = -kInf;
  y_out.compare.metrics.ulp_hist = {1, 2};
  y_out.compare.standards = {{"ascend-v0.3", {true, false, "0.1 > 2^-8"}},
                             {"ascend-dual-permille", {false, true, "not applicable"}}};
  OutputResult z_out;
  z_out.compare.name = "z";
  z_out.compare.standard = "exact";
  z_out.compare.metrics.budget_used = 0;
  r.outputs = {y_out, z_out};
  const HistoryCase c = history_case_from_result(r);
  EXPECT_EQ(c.id, "mffn.x.f16.001");
  EXPECT_EQ(c.verdict, "FAILED");
  EXPECT_EQ(c.duration_ms, 12.5);
  ASSERT_EQ(c.outputs.size(), 2u);
  const HistoryOutput& y = c.outputs[0];
  EXPECT_EQ(y.name, "y");
  EXPECT_EQ(y.check, "bound");
  EXPECT_FALSE(y.passed);
  EXPECT_EQ(y.budget_used, kInf);
  // Every scalar metric results.jsonl writes (21, beyond_range included), but budget_used, which has its own field; ulp_hist
  // and the ascend statistics are not scalars; plus passes.ascend-v0.3 (the standard that applies).
  EXPECT_EQ(y.metrics.size(), 21u);
  EXPECT_EQ(y.metrics.at("passes.ascend-v0.3"), 0.0);
  EXPECT_EQ(y.metrics.count("passes.ascend-dual-permille"), 0u);
  EXPECT_EQ(y.metrics.at("max_abs"), 1.5);
  EXPECT_TRUE(std::isnan(y.metrics.at("cosine")));
  EXPECT_EQ(y.metrics.at("max_rel"), -kInf);
  EXPECT_TRUE(c.outputs[1].passed);
  EXPECT_EQ(c.outputs[1].budget_used, 0.0);
}

}  // namespace
}  // namespace opgate::history
