// Issue 22, cause 1: MoeFinalizeRoutingV2Grad's gradScalesOut is `exact` only where the inputs make
// the fp32 sum exact. An exact fill generates such inputs; a value override does not keep that
// promise, so its case gets the bound.
#include <string>

#include <gtest/gtest.h>

#include "cases/registry.h"
#include "harness/backends.h"
#include "harness/runner.h"
#include "tests/cases/one_case.h"

namespace opgate {
namespace {

// fp32, one token, one slot, H = 3, scales: gradScales = sum_j expandedX[j] * gradY[j].
Case mfrg_case(const std::string& tensors) {
  const std::string text = R"({"op": "moe_finalize_routing_v2_grad", "cases": [{"id": "mfrg.exact_plan_test.f32.001", )"
                           R"("params": {"dtype": "float32", "R": 1, "K": 1, "H": 3, "scales": true, "expertNum": 1}, )"
                           R"("seed": 3, "fill": "exact", "tensors": {)" +
                           tensors + "}}]}";
  return one_case(text, "mfrg_exact_plan_test");
}

CaseResult run_on_emu(const Case& c) {
  auto emu = make_backend("emu");
  EXPECT_TRUE(emu);
  RunOptions opt;
  opt.isolate = false;
  return run_case(c, **emu, opt);
}

std::string plan_of(const CaseResult& r, const std::string& output) {
  for (const auto& o : r.outputs) {
    if (o.plan.name == output) return o.compare.standard;
  }
  return "";
}

TEST(MfrgExactPlan, an_overridden_exact_fill_gets_the_bound_its_fp32_sum_needs) {
  // Products 2^24, 1, -2^24: double gives 1, an fp32 sum in index order 0 (2^24 + 1 rounds to
  // 2^24). Both are right for some reduction order, so only a bound can judge them.
  const Case c = mfrg_case(R"("gradY": {"fill": {"values": [16777216, 1, -16777216]}}, )"
                           R"("expandedXOptional": {"fill": {"values": [1]}})");
  EXPECT_EQ(plan_fill(c), FillMode::kRealistic);
  const CaseResult r = run_on_emu(c);
  EXPECT_EQ(r.verdict, Verdict::kPassed) << r.reason;
  EXPECT_EQ(plan_of(r, "gradScalesOut"), "bound");
  EXPECT_EQ(plan_of(r, "gradExpandedXOut"), "exact");  // one exact product per element, overrides or not
}

TEST(MfrgExactPlan, a_generated_exact_fill_keeps_the_exact_plan) {
  const Case c = mfrg_case("");
  EXPECT_EQ(plan_fill(c), FillMode::kExact);
  const CaseResult r = run_on_emu(c);
  EXPECT_EQ(r.verdict, Verdict::kPassed) << r.reason;
  EXPECT_EQ(plan_of(r, "gradScalesOut"), "exact");
}

}  // namespace
}  // namespace opgate
