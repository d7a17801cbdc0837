// Every regression case must contain the condition its `issue` names (issue 12): a case that no
// longer holds its condition pins nothing. Each case id of every operator's regression.json has,
// in regression_claims_*_test.cpp, either a predicate over its params and filled inputs, written
// from the issue text (not from the code under test), or the reason its claim cannot be stated as
// one. An id with neither fails, so a new regression case must state its claim.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/case.h"
#include "cases/registry.h"
#include "tests/cases/regression_claims.h"

namespace opgate::regression_claims {
namespace {

const Claim* claim_of(const std::string& id) {
  for (const auto* table : {&mfrg_claims(), &fwb_claims(), &mffn_claims(), &ifa_claims(), &ifa4_claims()}) {
    const auto it = table->find(id);
    if (it != table->end()) return &it->second;
  }
  return nullptr;
}

class RegressionClaims : public ::testing::TestWithParam<std::string> {};

TEST_P(RegressionClaims, every_case_holds_the_condition_its_issue_names) {
  const std::string path = std::string(OPGATE_SOURCE_DIR) + "/cases/" + GetParam() + "/regression.json";
  auto cases = load_case_file(path);
  ASSERT_TRUE(cases.has_value()) << cases.status().message();
  ASSERT_FALSE(cases->empty()) << path;
  for (const Case& c : *cases) {
    SCOPED_TRACE(c.id);
    const Claim* claim = claim_of(c.id);
    ASSERT_NE(claim, nullptr) << c.id << " (" << c.issue
                              << ") states no claim: add a predicate or a reason to " << __FILE__;
    if (!claim->holds) {
      EXPECT_FALSE(claim->reason.empty()) << c.id << ": neither a predicate nor a reason";
      continue;
    }
    auto problem = make_problem(c);
    ASSERT_TRUE(problem.has_value()) << problem.status().message();
    auto in = (*problem)->fill(c.fill, c.seed);
    ASSERT_TRUE(in.has_value()) << in.status().message();
    const Filled f{(*problem)->params_json(), std::move(*in)};
    EXPECT_TRUE(claim->holds(f)) << c.id << " does not contain the condition of its issue: " << c.issue;
  }
}

// The claim of case `id` in cases/<stem>/regression.json after `patch` is merged into its params.
bool holds_after(const std::string& stem, const std::string& id, const Json& patch) {
  auto cases = load_case_file(std::string(OPGATE_SOURCE_DIR) + "/cases/" + stem + "/regression.json");
  EXPECT_TRUE(cases.has_value());
  if (!cases.has_value()) return true;
  for (Case c : *cases) {
    if (c.id != id) continue;
    c.params.merge_patch(patch);
    auto problem = make_problem(c);
    EXPECT_TRUE(problem.has_value()) << problem.status().message();
    if (!problem.has_value()) return true;
    auto in = (*problem)->fill(c.fill, c.seed);
    EXPECT_TRUE(in.has_value());
    if (!in.has_value()) return true;
    return claim_of(id)->holds(Filled{(*problem)->params_json(), std::move(*in)});
  }
  ADD_FAILURE() << id << " not found";
  return true;
}

// The predicates can fail: each is false on its case changed so that the condition is gone.
TEST(RegressionClaimsTable, predicates_reject_cases_without_the_condition) {
  // The case as it was before issue 12: its only Inf row had no dropped slot.
  EXPECT_FALSE(holds_after("moe_finalize_routing_v2_grad", "mfrg.dropped_no_bias_inf_grad.f32.001",
                           {{"dropRate", 0.125}}));
  EXPECT_FALSE(holds_after("moe_finalize_routing_v2_grad", "mfrg.bias_without_scales_ignored.f16.001",
                           {{"scales", true}}));
  EXPECT_FALSE(holds_after("ffn_worker_batching", "fwb.mask_threshold_exact.i8.001", {{"maskValue", 2147483647}}));
  EXPECT_FALSE(holds_after("ffn_worker_batching", "fwb.group_list_tail_multi_core.f16.001",
                           {{"maxOutShape", {2, 16, 9, 2}}}));  // 288 tokens: one core
  EXPECT_FALSE(holds_after("moe_ffn", "mffn.regress_leading_empty_experts.f16.001",
                           {{"expertTokens", {1, 0, 5, 0, 3}}}));
  EXPECT_FALSE(holds_after("incre_flash_attention_v3", "ifa.extra_lengths_ignored.bf16.001",
                           {{"actualSeqLengths", {12, 29}}}));
}

// The claims are no larger than the files: a stale entry would hide a renamed case.
TEST(RegressionClaimsTable, every_claim_names_a_current_regression_case) {
  std::set<std::string> ids;
  for (const OpInfo& op : all_ops()) {
    auto cases = load_case_file(std::string(OPGATE_SOURCE_DIR) + "/cases/" + op.stem + "/regression.json");
    ASSERT_TRUE(cases.has_value()) << cases.status().message();
    for (const Case& c : *cases) ids.insert(c.id);
  }
  for (const auto* table : {&mfrg_claims(), &fwb_claims(), &mffn_claims(), &ifa_claims(), &ifa4_claims()}) {
    for (const auto& [id, claim] : *table) EXPECT_TRUE(ids.count(id)) << id << " is in no regression.json";
  }
}

std::vector<std::string> stems() {
  std::vector<std::string> s;
  for (const OpInfo& op : all_ops()) s.push_back(op.stem);
  return s;
}

std::string op_test_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(AllOps, RegressionClaims, ::testing::ValuesIn(stems()), op_test_name);


}  // namespace
}  // namespace opgate::regression_claims
