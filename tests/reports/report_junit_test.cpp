// junit.xml as Jenkins groups it (issue 24): classname "opgate.<stem>.<tier>", and the run settings
// as plain property values, objects flattened to dotted names. (Schema validity end to end:
// tests/cli/junit_test.sh.)
#include "reports/report_junit.h"

#include <cstring>

#include <gtest/gtest.h>

namespace opgate {
namespace {

CaseResult result(const std::string& id, const std::string& op, const std::string& tier) {
  CaseResult r;
  r.id = id;
  r.op = op;
  r.tier = tier;
  return r;
}

bool has(const std::string& xml, const std::string& text) { return xml.find(text) != std::string::npos; }

TEST(Junit, classname_is_opgate_stem_tier) {
  const std::string xml = render_junit(nlohmann::json::object(),
                                       {result("mffn.a.001", "moe_ffn", "ci"), result("mffn.b.001", "moe_ffn", "smoke"),
                                        result("mffn.c.001", "moe_ffn", "")},
                                       "2026-01-01T00:00:00", "host");
  EXPECT_TRUE(has(xml, "<testcase classname=\"opgate.moe_ffn.ci\" name=\"mffn.a.001\"")) << xml;
  EXPECT_TRUE(has(xml, "<testcase classname=\"opgate.moe_ffn.smoke\" name=\"mffn.b.001\"")) << xml;
  EXPECT_TRUE(has(xml, "<testcase classname=\"opgate.moe_ffn\" name=\"mffn.c.001\"")) << xml;
}

TEST(Junit, properties_are_plain_values) {
  const nlohmann::json info{{"backend", {{"backend", "fault:x.y"}, {"device", "CPU"}}},
                            {"repeat", 1},
                            {"strict", false},
                            {"selection", {{"tiers", {"ci", "smoke"}}, {"filter", ""}}}};
  const std::string xml = render_junit(info, {result("a.b.001", "op", "ci")}, "2026-01-01T00:00:00", "host");
  EXPECT_TRUE(has(xml, "<property name=\"backend.backend\" value=\"fault:x.y\"/>")) << xml;
  EXPECT_TRUE(has(xml, "<property name=\"backend.device\" value=\"CPU\"/>")) << xml;
  EXPECT_TRUE(has(xml, "<property name=\"repeat\" value=\"1\"/>")) << xml;
  EXPECT_TRUE(has(xml, "<property name=\"strict\" value=\"false\"/>")) << xml;
  EXPECT_TRUE(has(xml, "<property name=\"selection.tiers\" value=\"ci,smoke\"/>")) << xml;
  EXPECT_TRUE(has(xml, "<property name=\"selection.filter\" value=\"\"/>")) << xml;
  EXPECT_FALSE(has(xml, "{")) << xml;   // no JSON object in any value
  EXPECT_FALSE(has(xml, "&quot;")) << xml;  // nor a quoted JSON string
}

// Two cases of one operator: output y passes bound in both, fails ascend-v0.3 in one and is not
// judged by it in the other.
TEST(Junit, each_suite_counts_its_outputs_under_the_standards) {
  auto with_y = [](const std::string& id, bool applies, bool passed) {
    CaseResult r = result(id, "moe_ffn", "ci");
    OutputResult y;
    y.compare.name = "y";
    y.compare.kind = CheckKind::kTolerance;
    y.compare.standard = "bound";
    y.compare.standards = {{"ascend-v0.3", {applies, passed, ""}}};
    r.outputs = {y};
    return r;
  };
  const std::string xml = render_junit(nlohmann::json::object(), {with_y("a", true, false), with_y("b", false, true)},
                                       "2026-01-01T00:00:00", "host");
  EXPECT_TRUE(has(xml, "<property name=\"standards.y.gate\" value=\"2 passed\"/>")) << xml;
  EXPECT_TRUE(has(xml, "<property name=\"standards.y.ascend-v0.3\" value=\"1 failed, 1 n/a\"/>")) << xml;
}

// Each verdict's JUnit element, written out by hand (README "Exit codes" and reports/README.md):
// infrastructure verdicts (CRASHED, TIMEOUT, BACKEND_ERROR, INVALID_CASE) are <error>s, a failing
// check a <failure>, MISTRUSTED a <failure> only with --strict, SKIPPED <skipped/>; the suite's
// counts agree with the elements.
TEST(Junit, each_verdict_gets_its_element_and_count) {
  struct Row {
    Verdict v;
    bool strict;
    const char* element;  // the text right after the <testcase ...> opening tag
    const char* counts;   // the suite's tests / failures / errors / skipped
  };
  const Row table[] = {
      {Verdict::kCrashed, false, "<error type=\"CRASHED\"", "tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\""},
      {Verdict::kTimeout, false, "<error type=\"TIMEOUT\"", "tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\""},
      {Verdict::kBackendError, false, "<error type=\"BACKEND_ERROR\"", "failures=\"0\" errors=\"1\""},
      {Verdict::kInvalidCase, false, "<error type=\"INVALID_CASE\"", "failures=\"0\" errors=\"1\""},
      {Verdict::kFailed, false, "<failure type=\"FAILED\"", "failures=\"1\" errors=\"0\""},
      {Verdict::kMistrusted, true, "<failure type=\"MISTRUSTED\"", "failures=\"1\" errors=\"0\""},
      {Verdict::kMistrusted, false, "<system-out>MISTRUSTED: ", "failures=\"0\" errors=\"0\" skipped=\"0\""},
      {Verdict::kSkipped, false, "<skipped message=", "failures=\"0\" errors=\"0\" skipped=\"1\""},
      {Verdict::kPassed, false, "</testcase>", "failures=\"0\" errors=\"0\" skipped=\"0\""},
  };
  for (const Row& row : table) {
    CaseResult r = result("op.case.001", "moe_ffn", "ci");
    r.verdict = row.v;
    r.reason = "the reason";
    const std::string xml =
        render_junit(nlohmann::json{{"strict", row.strict}}, {r}, "2026-01-01T00:00:00", "host");
    const std::string opening = "name=\"op.case.001\" time=\"0.000\">";
    const size_t at = xml.find(opening);
    ASSERT_NE(at, std::string::npos) << xml;
    EXPECT_EQ(xml.compare(at + opening.size(), std::strlen(row.element), row.element), 0)
        << verdict_name(row.v) << (row.strict ? " --strict" : "") << "\n" << xml;
    EXPECT_TRUE(has(xml, row.counts)) << verdict_name(row.v) << "\n" << xml;
  }
}

}  // namespace
}  // namespace opgate
