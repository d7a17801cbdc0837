// Every defect in the fault catalogue must be caught by its operator's ci tier: a gate that
// passes a known kernel bug is vacuous (DESIGN.md §4). Runs each defect over the ci cases until
// one FAILS.
#include <gtest/gtest.h>

#include "core/backend.h"
#include "core/case.h"
#include "core/op_registry.h"
#include "harness/runner.h"

namespace opgate {
namespace {

const OpInfo* op_of(const DefectInfo& d) {
  const std::string prefix = d.name.substr(0, d.name.find('.'));
  for (const auto& op : all_ops()) {
    if (op.short_name == prefix) return &op;
  }
  return nullptr;
}

class FaultCoverage : public ::testing::TestWithParam<DefectInfo> {};

TEST_P(FaultCoverage, ci_tier_fails_on_the_defect) {
  const DefectInfo& d = GetParam();
  const OpInfo* op = op_of(d);
  ASSERT_NE(op, nullptr) << d.name << ": the prefix names no operator's short name";
  auto cases = load_case_file(std::string(OPGATE_SOURCE_DIR) + "/cases/" + op->stem + "/ci.json");
  ASSERT_TRUE(cases.has_value()) << cases.status().message();
  auto backend = make_backend("fault:" + d.name);
  ASSERT_TRUE(backend.has_value()) << backend.status().message();
  RunOptions opt;
  opt.isolate = false;
  for (const Case& c : *cases) {
    if (c.expect != 0) continue;
    const CaseResult r = run_case(c, **backend, opt);
    if (r.verdict == Verdict::kFailed) {
      SUCCEED() << "caught by " << c.id << ": " << r.reason;
      return;
    }
  }
  ADD_FAILURE() << d.name << " (" << d.description << ") passes every case of " << op->stem << "/ci.json";
}

std::string defect_test_name(const ::testing::TestParamInfo<DefectInfo>& info) {
  std::string s = info.param.name;
  for (char& ch : s) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(AllDefects, FaultCoverage, ::testing::ValuesIn(all_defects()), defect_test_name);

}  // namespace
}  // namespace opgate
