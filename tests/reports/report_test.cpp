// results.jsonl reading and resuming from hand-written files: which bad lines may be skipped (a
// last line cut short by a crash) and which are errors, the cut before appending on resume, and
// the run info a resumed run must share with its folder (and the case count it refreshes there).
#include "reports/report.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "core/npy.h"

namespace opgate {
namespace {

std::string line(const std::string& id, Verdict v) {
  CaseResult r;
  r.id = id;
  r.op = "op_a";
  r.verdict = v;
  return to_json(r).dump() + "\n";
}

const nlohmann::json kRunInfo{{"backend", {{"backend", "emu"}, {"device", "CPU"}}}, {"repeat", 1}, {"against", "reference"}};

class ReportFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/opgate_report_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    results_ = dir_ + "/results.jsonl";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }
  std::string text(const std::string& path) {
    auto t = read_file(path);
    return t ? *t : "<unreadable>";
  }
  std::string dir_, results_;
};

TEST_F(ReportFiles, a_missing_file_holds_no_results) {
  auto r = read_results(dir_ + "/nowhere.jsonl");
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_TRUE(r->empty());
}

TEST_F(ReportFiles, a_partial_last_line_is_skipped) {
  const std::string b = line("b", Verdict::kFailed);
  write(results_, line("a", Verdict::kPassed) + b.substr(0, b.size() / 2));
  auto r = read_results(results_);
  ASSERT_TRUE(r) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].id, "a");
}

TEST_F(ReportFiles, a_complete_last_line_without_newline_is_kept) {
  const std::string b = line("b", Verdict::kFailed);
  write(results_, line("a", Verdict::kPassed) + b.substr(0, b.size() - 1));
  auto r = read_results(results_);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->size(), 2u);
}

TEST_F(ReportFiles, blank_lines_are_skipped) {
  write(results_, "\n" + line("a", Verdict::kPassed) + "  \n" + line("b", Verdict::kPassed));
  auto r = read_results(results_);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->size(), 2u);
}

TEST_F(ReportFiles, a_malformed_middle_line_names_file_and_line) {
  write(results_, line("a", Verdict::kPassed) + "not json\n" + line("b", Verdict::kPassed));
  auto r = read_results(results_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message().rfind(results_ + ": line 2: malformed JSON: ", 0), 0u) << r.status().message();
}

TEST_F(ReportFiles, a_malformed_last_line_with_its_newline_is_an_error) {
  // A crash cannot leave a newline after a partial line: this is corruption, not a cut.
  write(results_, line("a", Verdict::kPassed) + "{\"id\": \"b\", \"verd\n");
  auto r = read_results(results_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message().rfind(results_ + ": line 2: malformed JSON: ", 0), 0u) << r.status().message();
}

TEST_F(ReportFiles, a_two_results_glued_line_is_an_error) {
  // What appending after a partial line used to leave behind: half of one result, then another.
  const std::string b = line("b", Verdict::kFailed);
  write(results_, line("a", Verdict::kPassed) + b.substr(0, b.size() / 2) + line("c", Verdict::kPassed));
  auto r = read_results(results_);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find(": line 2: malformed JSON"), std::string::npos) << r.status().message();
}

TEST_F(ReportFiles, an_invalid_result_names_file_and_line) {
  write(results_, line("a", Verdict::kPassed) + R"({"id": "b", "verdict": "MAYBE"})" "\n");
  auto r = read_results(results_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message().rfind(results_ + ": line 2: ", 0), 0u) << r.status().message();
  EXPECT_NE(r.status().message().find("MAYBE"), std::string::npos);
}

TEST_F(ReportFiles, resume_cuts_the_partial_line_before_appending) {
  {
    auto first = ReportWriter::open(dir_, kRunInfo, false);  // a run that crashed: its lock is gone
    ASSERT_TRUE(first) << first.status().message();
  }
  const std::string b = line("b", Verdict::kFailed);
  write(results_, line("a", Verdict::kPassed) + b.substr(0, b.size() - 20));
  auto w = ReportWriter::open(dir_, kRunInfo, true);
  ASSERT_TRUE(w) << w.status().message();
  EXPECT_EQ(w->done_ids(), std::set<std::string>{"a"});
  EXPECT_EQ(text(results_), line("a", Verdict::kPassed));
  CaseResult again;
  again.id = "b";
  again.verdict = Verdict::kFailed;
  ASSERT_TRUE(w->append(again).is_ok());
  auto r = read_results(results_);
  ASSERT_TRUE(r) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[1].verdict, Verdict::kFailed);
  ASSERT_TRUE(finish_report(*w).is_ok());
  EXPECT_EQ(w->counts()[static_cast<size_t>(Verdict::kFailed)], 1);
}

TEST_F(ReportFiles, resume_runs_a_complete_but_unterminated_last_line_again) {
  // Kept by read_results, but cut by resume: appending after it would glue two results.
  ASSERT_TRUE(ReportWriter::open(dir_, kRunInfo, false));
  const std::string b = line("b", Verdict::kPassed);
  write(results_, line("a", Verdict::kPassed) + b.substr(0, b.size() - 1));
  auto w = ReportWriter::open(dir_, kRunInfo, true);
  ASSERT_TRUE(w) << w.status().message();
  EXPECT_EQ(w->done_ids(), std::set<std::string>{"a"});
  EXPECT_EQ(text(results_), line("a", Verdict::kPassed));
}

TEST_F(ReportFiles, resume_refuses_a_corrupt_file_and_leaves_it_alone) {
  ASSERT_TRUE(ReportWriter::open(dir_, kRunInfo, false));
  const std::string corrupt = line("a", Verdict::kPassed) + "garbage\n" + "{\"id\": \"c\"";
  write(results_, corrupt);
  auto w = ReportWriter::open(dir_, kRunInfo, true);
  ASSERT_FALSE(w);
  EXPECT_NE(w.status().message().find("line 2: malformed JSON"), std::string::npos) << w.status().message();
  EXPECT_EQ(text(results_), corrupt);
}

TEST_F(ReportFiles, open_writes_run_json) {
  ASSERT_TRUE(ReportWriter::open(dir_, kRunInfo, false));
  auto info = read_run_info(dir_);
  ASSERT_TRUE(info) << info.status().message();
  EXPECT_EQ(info->path, dir_ + "/run.json");
  EXPECT_EQ(info->info, kRunInfo);
}

TEST_F(ReportFiles, run_info_falls_back_to_the_summary_line) {
  write(dir_ + "/summary.txt", "opgate run " + kRunInfo.dump() + "\ncases:0\n");
  auto info = read_run_info(dir_);
  ASSERT_TRUE(info) << info.status().message();
  EXPECT_EQ(info->path, dir_ + "/summary.txt");
  EXPECT_EQ(info->info, kRunInfo);
  write(dir_ + "/summary.txt", "cases:0\n");
  EXPECT_FALSE(read_run_info(dir_));
}

TEST_F(ReportFiles, resume_refuses_another_configuration_naming_the_field) {
  ASSERT_TRUE(ReportWriter::open(dir_, kRunInfo, false));
  write(results_, line("a", Verdict::kPassed));
  const std::pair<const char*, nlohmann::json> changes[] = {
      {"backend", {{"backend", "fault:mfrg.k_major_index"}, {"device", "CPU"}}},
      {"repeat", 3},
      {"against", "golden"},
      {"shard", "0/2"}};
  for (const auto& [field, value] : changes) {
    nlohmann::json other = kRunInfo;
    other[field] = value;
    auto w = ReportWriter::open(dir_, other, true);
    ASSERT_FALSE(w) << field;
    EXPECT_EQ(w.status().message().rfind(dir_ + "/run.json: cannot resume: " + field + " was ", 0), 0u)
        << w.status().message();
  }
  EXPECT_EQ(text(results_), line("a", Verdict::kPassed));
  EXPECT_EQ(read_run_info(dir_)->info, kRunInfo);
}

TEST_F(ReportFiles, resume_ignores_fields_that_do_not_change_results) {
  ASSERT_TRUE(ReportWriter::open(dir_, kRunInfo, false));
  nlohmann::json other = kRunInfo;
  other["cases"] = 7;
  other["harness_version"] = "next";
  other["backend"]["device"] = "another description";
  EXPECT_TRUE(ReportWriter::open(dir_, other, true));
}

const nlohmann::json kSelection{{"ops", nlohmann::json::array()}, {"tiers", {"ci"}}, {"files", nlohmann::json::array()},
                                {"filter", ""}, {"generate", 0}, {"seed", 1}, {"size", ""}};

TEST_F(ReportFiles, resume_refuses_another_selection) {
  nlohmann::json info = kRunInfo;
  info["selection"] = kSelection;
  ASSERT_TRUE(ReportWriter::open(dir_, info, false));
  write(results_, line("a", Verdict::kPassed));
  nlohmann::json other = info;
  other["selection"]["filter"] = "adversarial";
  auto w = ReportWriter::open(dir_, other, true);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.status().message().rfind(dir_ + "/run.json: cannot resume: selection was {", 0), 0u)
      << w.status().message();
  EXPECT_TRUE(ReportWriter::open(dir_, info, true));
}

TEST_F(ReportFiles, resume_accepts_a_folder_that_recorded_no_selection) {
  ASSERT_TRUE(ReportWriter::open(dir_, kRunInfo, false));
  nlohmann::json now = kRunInfo;
  now["selection"] = kSelection;
  auto w = ReportWriter::open(dir_, now, true);
  EXPECT_TRUE(w) << w.status().message();
}

TEST_F(ReportFiles, resume_stores_this_runs_case_count) {
  nlohmann::json first = kRunInfo;
  first["cases"] = 5;
  first["harness_version"] = "first";
  ASSERT_TRUE(ReportWriter::open(dir_, first, false));
  nlohmann::json again = first;
  again["cases"] = 7;
  again["harness_version"] = "second";
  ASSERT_TRUE(ReportWriter::open(dir_, again, true));
  const nlohmann::json stored = read_run_info(dir_)->info;
  EXPECT_EQ(stored["cases"], 7);
  EXPECT_EQ(stored["harness_version"], "first");  // the rest is the first run's
}

TEST_F(ReportFiles, runs_compare_by_backend_identity_not_probe_details) {
  nlohmann::json other = kRunInfo;
  other["backend"]["device"] = "another description";
  EXPECT_EQ(first_difference(kRunInfo, other, kConfigFields), nullptr);
  other["backend"]["backend"] = "fault:x";
  EXPECT_STREQ(first_difference(kRunInfo, other, kConfigFields), "backend");
  EXPECT_EQ(run_field(kRunInfo, "backend"), "emu");
  other = kRunInfo;
  other.erase("against");
  EXPECT_STREQ(first_difference(kRunInfo, other, kConfigFields), "against");
  EXPECT_EQ(run_field_text(run_field(other, "against")), "unset");
}

TEST_F(ReportFiles, an_unfinished_run_is_named) {
  RunInfoFile run{dir_ + "/run.json", {{"cases", 3}}};
  EXPECT_TRUE(check_finished(dir_, run, 3).is_ok());
  const Status st = check_finished(dir_, run, 2);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.message().rfind(dir_ + ": unfinished run: 2 of 3 cases have results", 0), 0u) << st.message();
  EXPECT_TRUE(check_finished(dir_, RunInfoFile{"", nullptr}, 0).is_ok());  // nothing recorded
}

TEST_F(ReportFiles, a_report_is_a_folder_or_its_results_file) {
  write(results_, line("a", Verdict::kPassed));
  EXPECT_EQ(*report_folder(dir_), dir_);
  EXPECT_EQ(*report_folder(results_), dir_);
  auto missing = report_folder(dir_ + "/nowhere");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().message().rfind(dir_ + "/nowhere: no such report", 0), 0u) << missing.status().message();
  write(dir_ + "/other.jsonl", "");
  EXPECT_FALSE(report_folder(dir_ + "/other.jsonl"));
  std::filesystem::create_directories(dir_ + "/empty");
  auto empty = report_folder(dir_ + "/empty");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.status().message().find("empty/results.jsonl: missing"), std::string::npos);
}

TEST_F(ReportFiles, a_second_result_for_one_case_is_an_error) {
  write(results_, line("a", Verdict::kPassed) + line("b", Verdict::kPassed) + line("a", Verdict::kFailed));
  auto r = read_results(results_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message().rfind(results_ + ": line 3: second result for case 'a' (first at line 1)", 0), 0u)
      << r.status().message();
}

// flock belongs to the open file: a second open in the same process is refused like another process.
TEST_F(ReportFiles, a_locked_folder_is_refused_naming_the_holder) {
  auto first = ReportWriter::open(dir_, kRunInfo, false);
  ASSERT_TRUE(first) << first.status().message();
  ASSERT_TRUE(first->append(CaseResult{}).is_ok());
  const std::string before = text(results_);
  for (bool resume : {false, true}) {
    auto second = ReportWriter::open(dir_, kRunInfo, resume);
    ASSERT_FALSE(second);
    EXPECT_EQ(second.status().message().rfind(dir_ + ": being written by pid " + std::to_string(getpid()) + " on host ", 0), 0u)
        << second.status().message();
    EXPECT_NE(second.status().message().find("(" + dir_ + "/run.lock)"), std::string::npos);
  }
  EXPECT_EQ(text(results_), before);
  const Status st = check_not_being_written(dir_);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("being written by pid"), std::string::npos);
  EXPECT_FALSE(check_finished(dir_, RunInfoFile{"", nullptr}, 1).is_ok());
}

TEST_F(ReportFiles, a_released_lock_is_taken_again) {
  { ASSERT_TRUE(ReportWriter::open(dir_, kRunInfo, false)); }
  EXPECT_TRUE(check_not_being_written(dir_).is_ok());
  auto again = ReportWriter::open(dir_, kRunInfo, true);
  EXPECT_TRUE(again) << again.status().message();
}

TEST_F(ReportFiles, links_in_the_folder_are_refused_and_not_followed) {
  const std::string outside = dir_ + "/outside.txt";
  write(outside, "precious\n");
  const std::string folder = dir_ + "/report";
  std::filesystem::create_directory(folder);
  for (const char* name : {"results.jsonl", "run.json", "summary.txt", "junit.xml", "report.html", "failed"}) {
    const std::string link = folder + "/" + name;
    std::filesystem::create_symlink(outside, link);
    for (bool resume : {false, true}) {
      auto w = ReportWriter::open(folder, kRunInfo, resume);
      ASSERT_FALSE(w) << name;
      EXPECT_NE(w.status().message().find(link + ": "), std::string::npos) << w.status().message();
      EXPECT_NE(w.status().message().find("symbolic link"), std::string::npos) << w.status().message();
    }
    std::filesystem::remove(link);
  }
  EXPECT_EQ(text(outside), "precious\n");
}

// Later writes go through the folder's descriptors: a failed/ swapped for a link after open is not followed.
TEST_F(ReportFiles, failed_files_stay_in_the_folder_opened) {
  auto w = ReportWriter::open(dir_, kRunInfo, false);
  ASSERT_TRUE(w) << w.status().message();
  const std::string elsewhere = dir_ + "_elsewhere";
  std::filesystem::create_directory(elsewhere);
  std::filesystem::rename(dir_ + "/failed", dir_ + "/failed_moved");
  std::filesystem::create_directory_symlink(elsewhere, dir_ + "/failed");
  CaseResult r;
  r.id = "x";
  r.verdict = Verdict::kFailed;
  ASSERT_TRUE(w->append(r).is_ok());
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/failed_moved/x.json"));
  EXPECT_TRUE(std::filesystem::is_empty(elsewhere));
  std::filesystem::remove_all(elsewhere);
}

TEST_F(ReportFiles, warnings_round_trip) {
  CaseResult r;
  r.id = "w";
  r.warnings = {"output 'y' (30 bytes): the kernel changed 2 of the 34 bytes after its end"};
  auto back = case_result_from_json(to_json(r));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->warnings, r.warnings);
  EXPECT_FALSE(to_json(CaseResult{}).contains("warnings"));
}

// gate_exit_code against the README's table ("Exit codes: 0 nothing failed, 1 a case FAILED /
// BACKEND_ERROR / INVALID_CASE / TIMEOUT / CRASHED (and MISTRUSTED with --strict)"), one verdict
// at a time, written out by hand rather than taken from verdict_fails.
TEST(GateExitCode, each_verdict_alone_with_and_without_strict) {
  struct Row {
    Verdict v;
    int plain, strict;
  };
  const Row table[] = {
      {Verdict::kPassed, 0, 0},         {Verdict::kFailed, 1, 1},       {Verdict::kMistrusted, 0, 1},
      {Verdict::kSkipped, 0, 0},        {Verdict::kExpectedReject, 0, 0}, {Verdict::kInvalidCase, 1, 1},
      {Verdict::kBackendError, 1, 1},   {Verdict::kTimeout, 1, 1},      {Verdict::kCrashed, 1, 1},
  };
  ASSERT_EQ(std::size(table), kVerdictCount);
  for (const Row& row : table) {
    VerdictCounts counts{};
    counts[static_cast<size_t>(row.v)] = 3;
    EXPECT_EQ(gate_exit_code(counts, false), row.plain) << verdict_name(row.v);
    EXPECT_EQ(gate_exit_code(counts, true), row.strict) << verdict_name(row.v) << " --strict";
  }
}

TEST(GateExitCode, one_failing_verdict_among_passing_ones_fails_the_gate) {
  VerdictCounts counts{};
  EXPECT_EQ(gate_exit_code(counts, true), 0);  // nothing ran: nothing failed
  counts[static_cast<size_t>(Verdict::kPassed)] = 100;
  counts[static_cast<size_t>(Verdict::kSkipped)] = 5;
  counts[static_cast<size_t>(Verdict::kExpectedReject)] = 7;
  counts[static_cast<size_t>(Verdict::kMistrusted)] = 1;
  EXPECT_EQ(gate_exit_code(counts, false), 0);
  EXPECT_EQ(gate_exit_code(counts, true), 1);
  counts[static_cast<size_t>(Verdict::kMistrusted)] = 0;
  counts[static_cast<size_t>(Verdict::kTimeout)] = 1;
  EXPECT_EQ(gate_exit_code(counts, false), 1);
}

}  // namespace
}  // namespace opgate
