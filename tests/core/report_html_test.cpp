// report.html shows, per output, the determined elements and the error-balance counts next to the
// other metrics; outputs without a balance cluster (balance_limit 0) show the determined count only,
// outputs with too few clusters (limit infinite) say "not judged".
#include "core/report_html.h"

#include <gtest/gtest.h>

#include "core/compare.h"

namespace opgate {
namespace {

CaseResult result_with(const CompareResult& output) {
  CaseResult r;
  r.id = "op.case.f16.001";
  r.op = "op";
  r.tier = "ci";
  r.verdict = Verdict::kFailed;
  r.outputs.push_back(OutputResult{OutputCheck{}, output});
  return r;
}

TEST(ReportHtml, an_output_shows_its_determined_count_and_balance_counts) {
  // A bound output the gate judged: 12 of 16 determined, 3 above, 9 below, 2 away, 10 toward.
  CompareResult c;
  c.name = "y";
  c.standard = "bound";
  c.passed = false;
  c.metrics.compared = 16;
  c.metrics.determined = 12;
  c.metrics.balance_pos = 3;
  c.metrics.balance_neg = 9;
  c.metrics.balance_away = 2;
  c.metrics.balance_toward = 10;
  c.metrics.balance_limit = 7.5;
  const std::string html = render_html_report(nlohmann::json::object(), {result_with(c)}, VerdictCounts{});
  EXPECT_NE(html.find("det 12 of 16; balance +3/&minus;9, away 2/toward 10, limit 7.5"), std::string::npos) << html;
}

TEST(ReportHtml, an_unjudged_output_shows_the_determined_count_only) {
  CompareResult c;
  c.name = "idx";
  c.standard = "exact";
  c.metrics.compared = 5;
  c.metrics.determined = 5;
  const std::string html = render_html_report(nlohmann::json::object(), {result_with(c)}, VerdictCounts{});
  EXPECT_NE(html.find("det 5 of 5"), std::string::npos) << html;
  EXPECT_EQ(html.find("balance +"), std::string::npos) << html;
}

TEST(ReportHtml, an_output_too_small_to_tell_says_not_judged_instead_of_an_infinite_limit) {
  CompareResult c;
  c.name = "y";
  c.standard = "bound";
  c.metrics.compared = 4;
  c.metrics.balance_pos = 1;
  c.metrics.balance_limit = std::numeric_limits<double>::infinity();
  const std::string html = render_html_report(nlohmann::json::object(), {result_with(c)}, VerdictCounts{});
  EXPECT_NE(html.find("det 0 of 4; balance +1/&minus;0, away 0/toward 0, not judged (too few clusters)"),
            std::string::npos)
      << html;
  EXPECT_EQ(html.find("limit inf"), std::string::npos) << html;
}

}  // namespace
}  // namespace opgate
