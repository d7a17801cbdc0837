// summary.txt is for people (issue 24): it opens with a plain sentence, lists every failure (no
// "... and N more"), and keeps the run info JSON out of its first lines; folders without run.json
// still give their run info back from it.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "reports/report.h"

namespace opgate {
namespace {

const nlohmann::json kRunInfo{{"backend", {{"backend", "fault:x.y"}}}, {"repeat", 1}, {"against", "reference"}};

class Summary : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/opgate_summary_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // A finished report of `failed` FAILED and `passed` PASSED cases; its summary.txt lines.
  std::vector<std::string> summary(int failed, int passed) {
    auto w = ReportWriter::open(dir_, kRunInfo, false);
    EXPECT_TRUE(w) << w.status().message();
    for (int k = 0; k < failed + passed; ++k) {
      CaseResult r;
      r.id = "op.case." + std::to_string(k);
      r.verdict = k < failed ? Verdict::kFailed : Verdict::kPassed;
      r.reason = k < failed ? "y: 1 of 4 outside" : "";
      r.repro = "repro-of-" + std::to_string(k);
      EXPECT_TRUE(w->append(r).is_ok());
    }
    EXPECT_TRUE(finish_report(*w).is_ok());
    std::ifstream in(dir_ + "/summary.txt");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  std::string dir_;
};

TEST_F(Summary, every_failure_is_listed_with_its_repro) {
  const auto lines = summary(12, 3);
  int listed = 0;
  for (int k = 0; k < 12; ++k) {
    const std::string want = "FAILED op.case." + std::to_string(k) + ": y: 1 of 4 outside";
    for (size_t i = 0; i + 1 < lines.size(); ++i) {
      if (lines[i] == want && lines[i + 1] == "    repro: repro-of-" + std::to_string(k)) ++listed;
    }
  }
  EXPECT_EQ(listed, 12);
  for (const auto& line : lines) EXPECT_EQ(line.find("more (see"), std::string::npos) << line;
}

TEST_F(Summary, opens_with_a_sentence_and_keeps_json_out_of_the_first_lines) {
  const auto lines = summary(2, 1);
  ASSERT_GE(lines.size(), 6u);
  EXPECT_EQ(lines[0], "opgate: 2 of 3 cases failed on fault:x.y");
  // Then when, where and what (reports/run_facts.h), a blank line, and the failures.
  EXPECT_EQ(lines[1].rfind("started ", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("kernel rev not given · CANN n/a · SoC n/a ·", 0), 0u) << lines[2];
  EXPECT_EQ(lines[3].rfind("selection: ", 0), 0u) << lines[3];
  EXPECT_EQ(lines[5], "failed cases (2):");
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(lines[i].find('{'), std::string::npos) << lines[i];
  EXPECT_EQ(lines.back().rfind("cases:3 passed:1 failed:2 ", 0), 0u) << lines.back();
}

TEST_F(Summary, a_green_run_says_so_and_lists_nothing) {
  const auto lines = summary(0, 2);
  EXPECT_EQ(lines[0], "opgate: 0 of 2 cases failed on fault:x.y");
  for (const auto& line : lines) EXPECT_EQ(line.find("failed cases"), std::string::npos) << line;
}

TEST_F(Summary, run_info_is_read_back_from_it_without_run_json) {
  summary(1, 1);
  std::filesystem::remove(dir_ + "/run.json");
  auto info = read_run_info(dir_);
  ASSERT_TRUE(info) << info.status().message();
  EXPECT_EQ(info->path, dir_ + "/summary.txt");
  // The run info as written, which the finish completes with its end time (reports/run_facts.h).
  nlohmann::json read = info->info;
  ASSERT_TRUE(read.contains("finished_at"));
  EXPECT_EQ(read["finished_at"].get<std::string>().back(), 'Z');
  read.erase("finished_at");
  EXPECT_EQ(read, kRunInfo);
}

}  // namespace
}  // namespace opgate
