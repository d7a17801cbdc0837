// report.html says where the run's time went: each stage's total over the cases, largest first,
// with its share (the line summary.txt carries), and nothing when no stage was timed.
#include <gtest/gtest.h>

#include "reports/report_html.h"

namespace opgate {
namespace {

// Totals by hand: plan 0.5 + 1.5 = 2 ms, compare 3 + 1 = 4 ms, transfer 2 ms; sum 8 ms, so 50 %,
// 25 %, 25 %, and equal totals in pipeline order (plan before transfer).
TEST(ReportHtmlStages, the_stage_totals_follow_the_counts) {
  CaseResult a, b;
  a.id = "op.a";
  b.id = "op.b";
  a.stages_ms.plan = 0.5;
  a.stages_ms.compare = 3;
  b.stages_ms.plan = 1.5;
  b.stages_ms.compare = 1;
  b.stages_ms.transfer = 2;
  VerdictCounts counts{};
  counts[static_cast<size_t>(Verdict::kPassed)] = 2;
  const std::string html = render_html_report(nlohmann::json::object(), {a, b}, counts);
  const std::string line =
      "<p id=\"stage-times\"><small>where the time went: 0.008 s in stages: compare 0.004 s (50.0%), "
      "plan 0.002 s (25.0%), transfer 0.002 s (25.0%)</small></p>";
  const size_t at = html.find(line);
  ASSERT_NE(at, std::string::npos) << html;
  EXPECT_LT(html.find("id=\"counts\""), at);
}

TEST(ReportHtmlStages, untimed_results_show_no_stage_line) {
  CaseResult r;
  r.id = "op.a";
  const std::string html = render_html_report(nlohmann::json::object(), {r}, VerdictCounts{});
  EXPECT_EQ(html.find("stage-times"), std::string::npos);
  EXPECT_EQ(html.find("where the time went"), std::string::npos);
}

}  // namespace
}  // namespace opgate
