// report.html: the run settings as a table, the per-operator summary (counts by verdict, worst
// budget_used), the failing cases first with their links and worst elements, the case table's rows
// for the filters, escaping; and per output the determined elements and the error-balance counts
// (outputs without a balance cluster, balance_limit 0, show the determined count only; outputs with
// too few clusters, limit infinite, say "not judged").
#include "reports/report_html.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/compare.h"
#include "reports/report_trends.h"

namespace opgate {
namespace {

CaseResult case_of(const std::string& id, const std::string& op, Verdict v, double budget = -1) {
  CaseResult r;
  r.id = id;
  r.op = op;
  r.tier = "ci";
  r.verdict = v;
  r.reason = "reason of " + id;
  r.repro = "opgate repro cases/" + op + "/ci.json --id " + id;
  if (budget >= 0) {
    CompareResult c;
    c.name = "y";
    c.standard = "bound";
    c.passed = v != Verdict::kFailed;
    c.metrics.budget_used = budget;
    r.outputs.push_back(OutputResult{OutputCheck{}, c});
  }
  return r;
}

VerdictCounts counts_of(const std::vector<CaseResult>& results) {
  VerdictCounts counts{};
  for (const auto& r : results) ++counts[static_cast<size_t>(r.verdict)];
  return counts;
}

// The text from `start` up to and including the first `end` after it ("" when `start` is missing).
std::string slice(const std::string& html, const std::string& start, const std::string& end) {
  const size_t from = html.find(start);
  if (from == std::string::npos) return "";
  const size_t to = html.find(end, from);
  return to == std::string::npos ? html.substr(from) : html.substr(from, to + end.size() - from);
}

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

TEST(ReportHtml, the_run_settings_are_a_table_of_dotted_keys_not_a_json_dump) {
  const nlohmann::json info = {{"backend", {{"backend", "fault:x"}, {"device", "emu"}}},
                               {"repeat", 2},
                               {"selection", {{"ops", {"a", "b"}}, {"files", nlohmann::json::array()}}}};
  const std::string html = render_html_report(info, {}, VerdictCounts{});
  const std::string table = slice(html, "<table id=\"settings\">", "</table>");
  EXPECT_NE(table.find("<tr><th>backend.backend</th><td>fault:x</td></tr>"), std::string::npos) << table;
  EXPECT_NE(table.find("<tr><th>backend.device</th><td>emu</td></tr>"), std::string::npos) << table;
  EXPECT_NE(table.find("<tr><th>repeat</th><td>2</td></tr>"), std::string::npos) << table;
  EXPECT_NE(table.find("<tr><th>selection.ops</th><td>a, b</td></tr>"), std::string::npos) << table;
  EXPECT_NE(table.find("<tr><th>selection.files</th><td>&mdash;</td></tr>"), std::string::npos) << table;
  EXPECT_EQ(html.find("{&quot;backend"), std::string::npos) << html;
}

TEST(ReportHtml, the_operator_summary_counts_verdicts_and_names_the_worst_budget) {
  // alpha: 2 passed (budgets 0.25, 0.5), 1 failed (budget 3.5); beta: 1 crashed, 1 skipped, no outputs.
  const std::vector<CaseResult> results = {
      case_of("a1", "alpha", Verdict::kPassed, 0.25), case_of("b1", "beta", Verdict::kCrashed),
      case_of("a2", "alpha", Verdict::kFailed, 3.5),  case_of("a3", "alpha", Verdict::kPassed, 0.5),
      case_of("b2", "beta", Verdict::kSkipped)};
  const std::string html = render_html_report(nlohmann::json::object(), results, counts_of(results));
  const std::string header = slice(html, "<table id=\"ops\">", "</tr>");
  // Columns for the verdicts that occur, in verdict order, and none for those that do not.
  EXPECT_NE(header.find("<th>cases</th><th>PASSED</th><th>FAILED</th><th>SKIPPED</th><th>CRASHED</th>"
                        "<th>worst budget used</th>"),
            std::string::npos)
      << header;
  const std::string alpha = slice(html, "<tr class=\"op\" data-op=\"alpha\">", "</tr>");
  EXPECT_NE(alpha.find("<td class=\"n\">3</td><td class=\"n\" data-verdict=\"PASSED\">2</td>"
                       "<td class=\"n\" data-verdict=\"FAILED\">1</td><td class=\"n\" data-verdict=\"SKIPPED\">0</td>"
                       "<td class=\"n\" data-verdict=\"CRASHED\">0</td><td class=\"budget\" data-key=\"3.5\" "
                         "title=\"budget_used 3.5\">3.5x over <small>a2</small></td>"),
            std::string::npos)
      << alpha;
  const std::string beta = slice(html, "<tr class=\"op\" data-op=\"beta\">", "</tr>");
  EXPECT_NE(beta.find("<td class=\"n\">2</td><td class=\"n\" data-verdict=\"PASSED\">0</td>"
                      "<td class=\"n\" data-verdict=\"FAILED\">0</td><td class=\"n\" data-verdict=\"SKIPPED\">1</td>"
                      "<td class=\"n\" data-verdict=\"CRASHED\">1</td><td class=\"budget\">&mdash;</td>"),
            std::string::npos)
      << beta;
  EXPECT_LT(html.find("data-op=\"alpha\"><td>"), html.find("data-op=\"beta\"><td>"));  // by name
}

TEST(ReportHtml, the_failures_section_lists_the_failing_cases_in_run_order_with_links) {
  const std::vector<CaseResult> results = {
      case_of("c.passed", "op", Verdict::kPassed),     case_of("c.timeout", "op", Verdict::kTimeout),
      case_of("c.skipped", "op", Verdict::kSkipped),   case_of("c.failed", "op", Verdict::kFailed),
      case_of("c.rejected", "op", Verdict::kExpectedReject), case_of("c.mistrusted", "op", Verdict::kMistrusted),
      case_of("c.crashed", "op", Verdict::kCrashed),   case_of("c.invalid", "op", Verdict::kInvalidCase),
      case_of("c.backend", "op", Verdict::kBackendError)};
  const std::string html = render_html_report(nlohmann::json::object(), results, counts_of(results));
  const std::string section = slice(html, "<section id=\"failures\">", "</section>");
  ASSERT_FALSE(section.empty()) << html;
  EXPECT_NE(section.find("<h2>Failures (6)</h2>"), std::string::npos) << section;
  size_t at = 0;
  for (const char* id : {"c.timeout", "c.failed", "c.mistrusted", "c.crashed", "c.invalid", "c.backend"}) {
    const size_t found = section.find(fmt::format("<code>{}</code>", id), at);
    ASSERT_NE(found, std::string::npos) << id << " after offset " << at << " in " << section;
    EXPECT_NE(section.find(fmt::format("href=\"failed/{}.json\"", id)), std::string::npos) << id;
    EXPECT_NE(section.find(fmt::format("opgate repro cases/op/ci.json --id {}", id)), std::string::npos) << id;
    at = found;
  }
  for (const char* id : {"c.passed", "c.skipped", "c.rejected"}) {
    EXPECT_EQ(section.find(id), std::string::npos) << id << " is not a failure";
  }
}

TEST(ReportHtml, a_run_without_failures_says_so) {
  const std::vector<CaseResult> results = {case_of("c.passed", "op", Verdict::kPassed)};
  const std::string html = render_html_report(nlohmann::json::object(), results, counts_of(results));
  EXPECT_NE(html.find("<section id=\"failures\"><h2>Failures</h2><p>none</p></section>"), std::string::npos);
}

TEST(ReportHtml, a_failed_output_lists_its_five_worst_elements_in_domain_terms) {
  CompareResult c;
  c.name = "y";
  c.standard = "exact";
  c.passed = false;
  c.message = "7 of 8 compared elements outside exact (allowed 0)";
  for (int i = 0; i < 7; ++i) {
    ComparePoint p;
    p.index = {3, i};
    p.where = fmt::format("row 3 (r 1, k 1), col {}", i);
    p.expected = 1.5;
    p.expected_rounded = 1.5;
    p.got = 2.5 + i;
    p.abs_err = 1 + i;
    p.allowed = 0.125;
    c.worst.push_back(p);
  }
  c.worst[1].poison = true;
  c.worst[2].interval = true;
  c.worst[2].accepted_lo = 1.25;
  c.worst[2].accepted_hi = 1.75;
  CompareResult ok;
  ok.name = "fine_output";
  ok.worst = c.worst;  // a passed output's worst elements are not failures
  CaseResult r = result_with(c);
  r.outputs[0].plan.device_dtype = DType::kF16;
  r.outputs.push_back(OutputResult{OutputCheck{}, ok});
  const std::string html = render_html_report(nlohmann::json::object(), {r}, counts_of({r}));
  const std::string section = slice(html, "<section id=\"failures\">", "</section>");
  EXPECT_NE(section.find("<b>y</b> (exact, float16): 7 of 8 compared elements outside exact (allowed 0)"),
            std::string::npos)
      << section;
  // fp16 1.5 -> 2.5: 0.5 / 2^-10 = 512 values up to 2, then 0.5 / 2^-9 = 256 up to 2.5: 768 ulp.
  EXPECT_NE(section.find("<tr><td><code>[3,0]</code></td><td>row 3 (r 1, k 1), col 0</td><td>1.5</td><td>2.5</td>"
                         "<td class=\"n\">768</td><td>1</td><td>0.125</td><td>1.5</td></tr>"),
            std::string::npos)
      << section;
  EXPECT_NE(section.find("<td>3.5 <b>[poison]</b></td>"), std::string::npos) << section;
  EXPECT_NE(section.find("<td>4.5 <small>(accepted [1.25, 1.75])</small></td>"), std::string::npos) << section;
  EXPECT_NE(section.find("col 4</td>"), std::string::npos) << section;
  EXPECT_EQ(section.find("col 5</td>"), std::string::npos) << section;
  EXPECT_NE(section.find("2 more in the case file"), std::string::npos) << section;
  EXPECT_EQ(section.find("fine_output"), std::string::npos) << section;
}

TEST(ReportHtml, case_rows_carry_their_operator_and_verdict_for_the_filters_failures_first) {
  const std::vector<CaseResult> results = {case_of("c.p", "alpha", Verdict::kPassed, 0.5),
                                           case_of("c.f", "beta", Verdict::kFailed, 2)};
  const std::string html = render_html_report(nlohmann::json::object(), results, counts_of(results));
  const size_t failed = html.find("<tr class=\"case\" data-op=\"beta\" data-verdict=\"FAILED\" data-id=\"c.f\">");
  const size_t passed = html.find("<tr class=\"case\" data-op=\"alpha\" data-verdict=\"PASSED\" data-id=\"c.p\">");
  ASSERT_NE(failed, std::string::npos) << html;
  ASSERT_NE(passed, std::string::npos) << html;
  EXPECT_LT(failed, passed);
  for (const char* control : {"<select id=\"f-op\">", "<select id=\"f-verdict\">", "<input id=\"f-text\"",
                              "<option value=\"alpha\">alpha</option>", "<option>FAILED</option>"}) {
    EXPECT_NE(html.find(control), std::string::npos) << control;
  }
  EXPECT_EQ(html.find("<option>CRASHED</option>"), std::string::npos) << "only verdicts that occur";
}

TEST(ReportHtml, ids_and_operators_are_escaped_in_text_attributes_and_links) {
  const std::vector<CaseResult> results = {case_of("a<b&c\"d", "o<p", Verdict::kFailed)};
  const std::string html = render_html_report(nlohmann::json::object(), results, counts_of(results));
  EXPECT_EQ(html.find("a<b"), std::string::npos) << html;
  EXPECT_EQ(html.find("o<p"), std::string::npos) << html;
  EXPECT_EQ(html.find("c\"d"), std::string::npos) << html;
  EXPECT_NE(html.find("<code>a&lt;b&amp;c&quot;d</code>"), std::string::npos) << html;
  EXPECT_NE(html.find("data-id=\"a&lt;b&amp;c&quot;d\""), std::string::npos) << html;
  EXPECT_NE(html.find("data-op=\"o&lt;p\""), std::string::npos) << html;
  // A path segment: < is %3C, & is %26, " is %22.
  EXPECT_NE(html.find("href=\"failed/a%3Cb%26c%22d.json\""), std::string::npos) << html;
}

TEST(ReportHtml, a_run_gated_against_a_baseline_shows_the_change_counts_and_findings) {
  const std::vector<CaseResult> results = {case_of("c.new", "op", Verdict::kFailed, 2),
                                           case_of("c.drift", "op", Verdict::kPassed, 0.75)};
  BaselineDiff diff;
  diff.findings.push_back({BaselineChange::kNewFailure, "c.new", "PASSED", "FAILED", "reason of c.new"});
  diff.findings.push_back({BaselineChange::kMissing, "c.gone", "PASSED", "", ""});
  diff.findings.push_back({BaselineChange::kDrift, "c.drift", "PASSED", "PASSED", "y: tolerance used 0.25 -> 0.75"});
  diff.findings.push_back({BaselineChange::kNewCase, "c<x", "", "PASSED", ""});
  diff.unchanged = 40;
  const std::string html =
      render_html_report(nlohmann::json::object(), results, counts_of(results), &diff, "baselines/emu");
  const std::string section = slice(html, "<section id=\"baseline\">", "</section>");
  ASSERT_FALSE(section.empty()) << html;
  EXPECT_NE(section.find("<code>baselines/emu</code>"), std::string::npos) << section;
  for (const char* shown : {"NEW_FAILURE 1", "MISSING 1", "DRIFT 1", "NEW_CASE 1", "unchanged 40"}) {
    EXPECT_NE(section.find(shown), std::string::npos) << shown << " in " << section;
  }
  EXPECT_EQ(section.find("FIXED"), std::string::npos) << "no count for a change that did not happen";
  EXPECT_NE(section.find("<td>DRIFT</td><td><code>c.drift</code></td><td>PASSED</td><td>PASSED</td>"
                         "<td>y: tolerance used 0.25 -&gt; 0.75</td>"),
            std::string::npos)
      << section;
  EXPECT_NE(section.find("<td>MISSING</td><td><code>c.gone</code></td><td>PASSED</td><td>(not run)</td>"),
            std::string::npos)
      << section;
  EXPECT_NE(section.find("<td>NEW_CASE</td><td><code>c&lt;x</code></td><td>(absent)</td>"), std::string::npos)
      << section;
  EXPECT_LT(section.find("c.new"), section.find("c.gone"));  // the diff's order, most serious first
  // Without a baseline there is no such section.
  EXPECT_EQ(render_html_report(nlohmann::json::object(), results, counts_of(results)).find("id=\"baseline\""),
            std::string::npos);
}

TEST(ReportHtml, the_page_is_self_contained) {
  const std::vector<CaseResult> results = {case_of("c.f", "op", Verdict::kFailed, 2)};
  const std::string html = render_html_report(nlohmann::json::object(), results, counts_of(results));
  for (const char* external : {"http:", "https:", "src=", "<link", "@import"}) {
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  }
  EXPECT_NE(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("<style>"), std::string::npos);
}

TEST(ReportHtml, a_failing_output_draws_its_error_along_dim_0) {
  // Four cells: within a tenth (grey), within the allowance (amber), beyond (red), a mismatch.
  CompareResult c;
  c.name = "y";
  c.standard = "bound";
  c.passed = false;
  c.metrics.axis_rows = 8;
  c.metrics.axis_budget = {0.05, 0.5, 3, CompareMetrics::kAxisFailing};
  CaseResult r;
  r.id = "op.case.f16.001";
  r.op = "op";
  r.verdict = Verdict::kFailed;
  r.outputs.push_back(OutputResult{OutputCheck{}, c});
  const std::string unnamed = render_html_report(nlohmann::json::object(), {r}, VerdictCounts{});
  EXPECT_NE(unnamed.find("y: error along dim 0 (dim 0: 8 indices in 4 cells"), std::string::npos) << unnamed;
  // The operator names the axis (Problem::describe of an empty index); the legend gives the colours.
  r.outputs[0].compare.axis_name = "expert";
  const std::string html = render_html_report(nlohmann::json::object(), {r}, VerdictCounts{});
  EXPECT_NE(html.find("<svg class=\"axis\""), std::string::npos) << html;
  EXPECT_NE(html.find("y: error along expert (dim 0: 8 indices in 4 cells"), std::string::npos);
  EXPECT_NE(html.find("fill=\"#cfd8dc\"><title>expert 0-1: 0.05</title>"), std::string::npos);
  EXPECT_NE(html.find("fill=\"#f9a825\"><title>expert 2-3: 0.5</title>"), std::string::npos);
  EXPECT_NE(html.find("fill=\"#c62828\"><title>expert 4-5: 3</title>"), std::string::npos);
  EXPECT_NE(html.find("fill=\"#c62828\"><title>expert 6-7: mismatch</title>"), std::string::npos);
  const size_t legend = html.find("</svg><p class=\"legend\"><small>share of the allowance used:");
  EXPECT_NE(legend, std::string::npos) << html;
  for (const char* colour : {"#cfd8dc", "#f9a825", "#c62828"}) {
    EXPECT_NE(html.find(colour, legend), std::string::npos) << colour << " in the legend";
  }
}

TEST(ReportHtml, a_history_trend_charts_budget_per_run_and_marks_failures) {
  // Two runs: budget 0.5 (passed, green), then 3 (failed, red); on the log scale y = 36 - 32 *
  // log10(1 + b) / log10(4): 0.5 -> 26.6, 3 -> 4.0, and the allowance line at b = 1 -> 20.0.
  CaseResult r;
  r.id = "op.case.f16.001";
  r.op = "op";
  r.verdict = Verdict::kFailed;
  const std::vector<BudgetTrend> trends = {
      {"op.case.f16.001", "y", {"run 1", "run 2 (abc)"}, {0.5, 3.0}, {false, true}, {}, {}}};
  const std::string html = render_html_report(nlohmann::json::object(), {r}, VerdictCounts{}, nullptr, "", &trends);
  EXPECT_NE(html.find("<h2 id=\"trends\">"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"trend\" data-id=\"op.case.f16.001\"><td><code>op.case.f16.001</code></td><td>y</td>"
                      "<td>new failure</td>"),
            std::string::npos) << html;
  // The first and last values, bounded (0.5 is within the allowance, 3 is 3.0x over it), a failed
  // run marked as such.
  EXPECT_NE(html.find(">0.50 &rarr; 3.0x over (failed)</span>"), std::string::npos) << html;
  EXPECT_NE(html.find("<circle cx=\"6.0\" cy=\"26.6\" r=\"3\" fill=\"#2e7d32\"><title>run 1: 0.5</title></circle>"),
            std::string::npos);
  EXPECT_NE(html.find("<circle cx=\"234.0\" cy=\"4.0\" r=\"3\" fill=\"#c62828\"><title>run 2 (abc): 3 (failed)</title></circle>"),
            std::string::npos);
  EXPECT_NE(html.find("y1=\"20.0\""), std::string::npos);
  // Without a history the section is absent.
  EXPECT_EQ(render_html_report(nlohmann::json::object(), {r}, VerdictCounts{}).find("id=\"trends\""), std::string::npos);
}

TEST(ReportHtml, trends_that_say_something_come_first_and_identical_flat_ones_share_a_row) {
  // a and b: the same flat trend (failed at 2 in both runs); c drifted from 1.5 to 3; the dates and
  // revs label the axis ("12-05 abc1234" .. "12-06 def5678").
  const std::vector<std::string> runs = {"run 1", "run 2"}, dates = {"2026-12-05T01:00:00Z", "2026-12-06T01:00:00Z"},
                                 revs = {"abc1234", "def5678"};
  const std::vector<BudgetTrend> trends = {{"a.case", "y", runs, {2, 2}, {true, true}, dates, revs},
                                           {"b.case", "y", runs, {2, 2}, {true, true}, dates, revs},
                                           {"c.case", "y", runs, {1.5, 3}, {true, true}, dates, revs}};
  CaseResult r;
  r.id = "c.case";
  r.verdict = Verdict::kFailed;
  const std::string html = render_html_report(nlohmann::json::object(), {r}, VerdictCounts{}, nullptr, "", &trends);
  const size_t c = html.find("<tr class=\"trend\" data-id=\"c.case\">");
  const size_t flat = html.find("<tr class=\"trend flat\" data-id=\"a.case\">");
  ASSERT_NE(c, std::string::npos) << html;
  ASSERT_NE(flat, std::string::npos) << html;
  EXPECT_LT(c, flat);
  EXPECT_EQ(html.find("data-id=\"b.case\""), std::string::npos) << "b shares a's row";
  EXPECT_NE(html.find("<code>a.case</code> y<br><code>b.case</code> y</td><td>flat, 2 output(s)</td>", flat),
            std::string::npos) << html;
  EXPECT_NE(html.find("<td>drift</td>", c), std::string::npos);
  size_t svgs = 0;
  for (size_t at = html.find("<svg class=\"trend\""); at != std::string::npos; at = html.find("<svg class=\"trend\"", at + 1)) ++svgs;
  EXPECT_EQ(svgs, 2u) << "one picture for c, one for the shared flat shape";
  EXPECT_NE(html.find(">12-05 abc1234</text>"), std::string::npos) << html;
  EXPECT_NE(html.find("text-anchor=\"end\">12-06 def5678</text>"), std::string::npos) << html;
  EXPECT_NE(html.find(">allowance</text>"), std::string::npos);
}

TEST(ReportHtml, a_trend_says_new_failure_flaky_drift_or_nothing) {
  EXPECT_EQ(trend_story({"c", "y", {}, {0.5, 3}, {false, true}, {}, {}}), "new failure");
  EXPECT_EQ(trend_story({"c", "y", {}, {3, 0.5, 3, 3}, {true, false, true, true}, {}, {}}), "flaky (2 flips)");
  EXPECT_EQ(trend_story({"c", "y", {}, {1.5, 3}, {true, true}, {}, {}}), "drift");
  // 2 -> 2.1 moves by 0.1, under a tenth of 2.1: flat.
  EXPECT_EQ(trend_story({"c", "y", {}, {2, 2.1}, {true, true}, {}, {}}), "");
}

}  // namespace
}  // namespace opgate
