// What `opgate run` prints for people (tools/run_console.h): expected text written out by hand.
// (The run end to end, through a pipe and a terminal: tests/cli/console_test.sh.)
#include <gtest/gtest.h>

#include "tools/run_console.h"

namespace opgate::cli {
namespace {

CaseResult result(const std::string& id, Verdict v, const std::string& reason = "") {
  CaseResult r;
  r.id = id;
  r.verdict = v;
  r.reason = reason;
  r.repro = "/abs/opgate repro /abs/ci.json --id " + id;
  r.total_ms = 4.125;
  OutputResult o;
  o.compare.name = "y";
  o.compare.standard = "exact";
  o.compare.passed = v == Verdict::kPassed;
  o.compare.message = reason;
  r.outputs.push_back(o);
  return r;
}

TEST(RunConsole, colour_only_on_a_terminal_without_no_color_or_ci_unless_forced) {
  EXPECT_TRUE(color_enabled(ColorMode::kAuto, true, false, false));
  EXPECT_FALSE(color_enabled(ColorMode::kAuto, false, false, false));  // a pipe or a file
  EXPECT_FALSE(color_enabled(ColorMode::kAuto, true, true, false));    // NO_COLOR
  EXPECT_FALSE(color_enabled(ColorMode::kAuto, true, false, true));    // CI
  EXPECT_TRUE(color_enabled(ColorMode::kAlways, false, true, true));
  EXPECT_FALSE(color_enabled(ColorMode::kNever, true, false, false));
}

TEST(RunConsole, a_passing_case_is_one_short_line) {
  const std::string line = case_text(result("mffn.relu_exact.f16.001", Verdict::kPassed), 12, 228, {});
  // Counter, verdict padded to 13 columns, id padded to 44, the time right-aligned in 8 columns.
  EXPECT_EQ(line, "[  12/228] PASSED       mffn.relu_exact.f16.001                           4.1 ms\n");
  EXPECT_LT(line.size(), 120u);
}

TEST(RunConsole, verbose_passing_line_names_each_output_check) {
  ConsoleStyle style;
  style.verbose = true;
  const std::string line = case_text(result("mffn.relu_exact.f16.001", Verdict::kPassed), 1, 9, style);
  EXPECT_NE(line.find("4.1 ms  y exact ulp<=0"), std::string::npos) << line;
}

TEST(RunConsole, a_failure_is_red_with_its_reason_and_repro) {
  ConsoleStyle style;
  style.color = true;
  const std::string text = case_text(result("mfrg.k.f16.001", Verdict::kFailed, "y: 3 of 4 outside exact"), 2, 9, style);
  EXPECT_EQ(text.rfind("[   2/9] \033[1;31mFAILED\033[0m       mfrg.k.f16.001", 0), 0u) << text;
  EXPECT_NE(text.find("  y: 3 of 4 outside exact\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    repro: /abs/opgate repro /abs/ci.json --id mfrg.k.f16.001\n"), std::string::npos) << text;
  style.color = false;
  const std::string plain = case_text(result("mfrg.k.f16.001", Verdict::kFailed, "y: bad"), 2, 9, style);
  EXPECT_EQ(plain.find('\033'), std::string::npos) << plain;
}

TEST(RunConsole, end_list_holds_every_failure_and_no_pass) {
  const std::vector<CaseResult> results = {result("a.ok.001", Verdict::kPassed),
                                           result("a.bad.001", Verdict::kFailed, "y: 1 of 4 outside"),
                                           result("a.slow.001", Verdict::kTimeout, "timed out after 1 s"),
                                           result("a.vacuous.001", Verdict::kMistrusted, "vacuous")};
  EXPECT_EQ(failed_list(results, {}),
            "failed cases (2):\n"
            "  FAILED       a.bad.001: y: 1 of 4 outside\n"
            "      repro: /abs/opgate repro /abs/ci.json --id a.bad.001\n"
            "  TIMEOUT      a.slow.001: timed out after 1 s\n"
            "      repro: /abs/opgate repro /abs/ci.json --id a.slow.001\n");
  ConsoleStyle strict;
  strict.strict = true;  // MISTRUSTED fails the gate, so it is listed
  EXPECT_EQ(failed_list(results, strict).rfind("failed cases (3):\n", 0), 0u);
  EXPECT_EQ(failed_list({results[0]}, {}), "");
}

TEST(RunConsole, totals_lead_with_failures_and_end_with_the_wall_time) {
  VerdictCounts counts{};
  counts[static_cast<size_t>(Verdict::kPassed)] = 180;
  counts[static_cast<size_t>(Verdict::kFailed)] = 48;
  EXPECT_EQ(totals_line(counts, 1.14, {}), "48 failed, 180 passed in 1.1 s\n");
  ConsoleStyle colour;
  colour.color = true;
  EXPECT_EQ(totals_line(counts, 1.14, colour), "\033[1;31m48 failed, 180 passed in 1.1 s\033[0m\n");
  counts[static_cast<size_t>(Verdict::kFailed)] = 0;
  counts[static_cast<size_t>(Verdict::kSkipped)] = 2;
  // 125.3 s rounds to 125 s = 2 min 5 s.
  EXPECT_EQ(totals_line(counts, 125.3, colour), "\033[32m180 passed, 2 skipped in 125 s (0:02:05)\033[0m\n");
  EXPECT_EQ(totals_line(VerdictCounts{}, 0.04, {}), "no cases in 0.0 s\n");
}

TEST(RunConsole, control_bytes_cannot_reach_the_terminal) {
  EXPECT_EQ(console_text("a\033[2Jb\nc\td\x7f"), "a[2Jb c d");
}

}  // namespace
}  // namespace opgate::cli
