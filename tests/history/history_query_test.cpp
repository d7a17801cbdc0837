// The four history questions on a hand-built history whose answers are worked out below.
//
//   run  started     rev  c1                c2      c3
//   1    2026-11-01  A    PASSED  y 0.5     FAILED  PASSED
//   2    2026-11-02  A    FAILED  y 2.0     FAILED  PASSED
//   3    2026-11-03  B    FAILED  y 3.0     PASSED  SKIPPED
//   4    2026-11-04  B    TIMEOUT (no y)    PASSED  FAILED
//   5    2026-11-05  -    -                 -       FAILED
//
// Failing now: c1 (streak runs 2-4, 3 results), c3 (runs 4-5, 2 results; SKIPPED in run 3 is
// passed over, so the result before the streak is run 2's PASSED). Flaky: c1 under A (PASSED ->
// FAILED) and under B (FAILED -> TIMEOUT); c2 changes only across revs; run 5 has no rev.
#include "history/history_query.h"

#include <cmath>

#include <gtest/gtest.h>

#include "history/history_format.h"
#include "history/history_record.h"
#include "tests/history/history_testing.h"

namespace opgate::history {
namespace {

using testing::make_case;

class HistoryQueryTest : public testing::ScratchDir {
 protected:
  void SetUp() override {
    ScratchDir::SetUp();
    file_ = path("h.db");
    auto rec = HistoryRecorder::open(file_);
    ASSERT_TRUE(rec) << rec.status().message();
    const char* revs[] = {"A", "A", "B", "B", ""};
    const std::vector<std::vector<HistoryCase>> runs = {
        {make_case("c1", "PASSED", {{"y", 0.5}}), make_case("c2", "FAILED"), make_case("c3", "PASSED")},
        {make_case("c1", "FAILED", {{"y", 2.0}}), make_case("c2", "FAILED"), make_case("c3", "PASSED")},
        {make_case("c1", "FAILED", {{"y", 3.0}}), make_case("c2", "PASSED"), make_case("c3", "SKIPPED")},
        {make_case("c1", "TIMEOUT"), make_case("c2", "PASSED"), make_case("c3", "FAILED")},
        {make_case("c3", "FAILED")},
    };
    for (size_t i = 0; i < runs.size(); ++i) {
      RunMeta m;
      m.started_at = "2026-11-0" + std::to_string(i + 1) + "T00:00:00Z";
      m.kernel_rev = revs[i];
      m.harness_version = "test";
      m.backend = "emu";
      m.host = "elsewhere";  // not this host: an unended run reads as interrupted
      ASSERT_TRUE((*rec)->begin_run(m).is_ok());
      for (const auto& c : runs[i]) ASSERT_TRUE((*rec)->record(c).is_ok());
      if (i != 3) {  // run 4 was killed
        ASSERT_TRUE((*rec)->end_run(0).is_ok());
      }
    }
    auto db = HistoryDb::open_for_reading(file_);
    ASSERT_TRUE(db) << db.status().message();
    db_ = std::make_unique<HistoryDb>(std::move(*db));
  }
  std::string file_;
  std::unique_ptr<HistoryDb> db_;
};

std::vector<std::string> ids(const std::vector<FailingCase>& cases) {
  std::vector<std::string> out;
  for (const auto& c : cases) out.push_back(c.case_id);
  return out;
}

TEST_F(HistoryQueryTest, FailingCasesAndTheirStreaks) {
  auto failing = failing_cases(*db_, "");
  ASSERT_TRUE(failing) << failing.status().message();
  ASSERT_EQ(ids(*failing), (std::vector<std::string>{"c1", "c3"}));
  EXPECT_EQ((*failing)[0].since.run.run_id, 2);
  EXPECT_EQ((*failing)[0].streak, 3);
  EXPECT_EQ((*failing)[0].now.verdict, "TIMEOUT");
  EXPECT_EQ((*failing)[0].now.run.state, "interrupted");
  EXPECT_EQ((*failing)[1].since.run.run_id, 4);
  EXPECT_EQ((*failing)[1].streak, 2);
  EXPECT_EQ((*failing)[1].now.run.run_id, 5);
}

TEST_F(HistoryQueryTest, FailingSinceARunOrADate) {
  EXPECT_EQ(ids(*failing_cases(*db_, "2")), (std::vector<std::string>{"c1", "c3"}));
  EXPECT_EQ(ids(*failing_cases(*db_, "3")), (std::vector<std::string>{"c3"}));
  EXPECT_EQ(ids(*failing_cases(*db_, "5")), (std::vector<std::string>{}));
  EXPECT_EQ(ids(*failing_cases(*db_, "2026-11-02")), (std::vector<std::string>{"c1", "c3"}));
  EXPECT_EQ(ids(*failing_cases(*db_, "2026-11-03T12:00:00Z")), (std::vector<std::string>{"c3"}));
  auto no_run = failing_cases(*db_, "9");
  ASSERT_FALSE(no_run);
  EXPECT_EQ(no_run.status().message(), file_ + ": --failing-since: no run 9");
  auto bad = failing_cases(*db_, "yesterday");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.status().message(),
            "--failing-since: expected a run id or a UTC date (2026-12-01 or 2026-12-01T18:00:00Z), got 'yesterday'");
}

TEST_F(HistoryQueryTest, FlakyIsAVerdictChangeUnderOneKernelRev) {
  int64_t unrevisioned = -1;
  auto flaky = flaky_cases(*db_, &unrevisioned);
  ASSERT_TRUE(flaky) << flaky.status().message();
  EXPECT_EQ(unrevisioned, 1);
  ASSERT_EQ(flaky->size(), 2u);
  EXPECT_EQ((*flaky)[0].case_id, "c1");
  EXPECT_EQ((*flaky)[0].kernel_rev, "A");
  EXPECT_EQ((*flaky)[0].flips, 1);
  ASSERT_EQ((*flaky)[0].runs.size(), 2u);
  EXPECT_EQ((*flaky)[0].runs[1].verdict, "FAILED");
  EXPECT_EQ((*flaky)[1].case_id, "c1");
  EXPECT_EQ((*flaky)[1].kernel_rev, "B");
  EXPECT_EQ(flaky_text(*flaky, unrevisioned),
            "c1  kernel rev A on emu: 1 flip(s) in 2 runs: 1:PASSED 2:FAILED\n"
            "c1  kernel rev B on emu: 1 flip(s) in 2 runs: 3:FAILED 4:TIMEOUT\n"
            "(1 run(s) without --kernel-rev left out)\n");
}

TEST_F(HistoryQueryTest, RunsListsEachRunWithItsCounts) {
  auto all = recorded_runs(*db_, 0);
  ASSERT_TRUE(all) << all.status().message();
  ASSERT_EQ(all->size(), 5u);
  EXPECT_EQ((*all)[0].cases, 3);  // run 1: c1 PASSED, c2 FAILED, c3 PASSED
  EXPECT_EQ((*all)[0].verdicts, (std::map<std::string, int64_t>{{"FAILED", 1}, {"PASSED", 2}}));
  EXPECT_EQ((*all)[2].verdicts, (std::map<std::string, int64_t>{{"FAILED", 1}, {"PASSED", 1}, {"SKIPPED", 1}}));
  EXPECT_FALSE((*all)[3].exit_code.has_value());  // run 4 was killed
  auto last = recorded_runs(*db_, 2);
  ASSERT_TRUE(last) << last.status().message();
  EXPECT_EQ(runs_text(*last),
            "    4  2026-11-04T00:00:00Z  rev B  emu  files  interrupted  3 cases: 1 FAILED, 1 PASSED, 1 TIMEOUT\n"
            "    5  2026-11-05T00:00:00Z  rev -  emu  files  exit 0  1 case: 1 FAILED\n");
  const nlohmann::json j = runs_json(*last);
  EXPECT_EQ(j["runs"][0]["exit_code"], nullptr);
  EXPECT_EQ(j["runs"][1]["verdicts"]["FAILED"], 1);
}

// One kernel rev judged by three devices: a fault night fails the case, an emu night and an
// ascend night on two SoCs pass it. No device changed its mind, so nothing is flaky; a second emu
// night that fails it is a flip of the emu device only.
class HistoryFlaky : public testing::ScratchDir {};

TEST_F(HistoryFlaky, IsJudgedPerBackendAndSoc) {
  const std::string file = path("h.db");
  auto rec = HistoryRecorder::open(file);
  ASSERT_TRUE(rec) << rec.status().message();
  struct Night {
    const char* backend;
    const char* soc;
    const char* verdict;
  };
  auto record = [&](const std::vector<Night>& nights) {
    for (const Night& n : nights) {
      RunMeta m;
      m.started_at = "2026-11-01T00:00:00Z";
      m.kernel_rev = "A";
      m.harness_version = "test";
      m.backend = n.backend;
      m.soc = n.soc;
      m.host = "elsewhere";
      ASSERT_TRUE((*rec)->begin_run(m).is_ok());
      ASSERT_TRUE((*rec)->record(make_case("c1", n.verdict)).is_ok());
      ASSERT_TRUE((*rec)->end_run(0).is_ok());
    }
  };
  auto flaky = [&] {
    auto db = HistoryDb::open_for_reading(file);
    EXPECT_TRUE(db) << db.status().message();
    int64_t unrevisioned = 0;
    auto f = flaky_cases(*db, &unrevisioned);
    EXPECT_TRUE(f) << f.status().message();
    return f ? *f : std::vector<FlakyCase>{};
  };
  record({{"fault:ifa.pse_scaled", "", "FAILED"}, {"emu", "", "PASSED"}, {"ascend", "Ascend910B1", "PASSED"},
          {"ascend", "Ascend910B2", "FAILED"}});
  EXPECT_TRUE(flaky().empty());
  record({{"emu", "", "FAILED"}});
  const auto f = flaky();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].backend, "emu");
  EXPECT_EQ(f[0].flips, 1);
  ASSERT_EQ(f[0].runs.size(), 2u);
  EXPECT_EQ(f[0].runs[0].run.run_id, 2);
  EXPECT_EQ(f[0].runs[1].run.run_id, 5);
}

TEST_F(HistoryQueryTest, TrendIsBudgetUsedPerRun) {
  auto t = budget_trend(*db_, "c1", "", 3);
  ASSERT_TRUE(t) << t.status().message();
  EXPECT_EQ(t->outputs, (std::vector<std::string>{"y"}));
  ASSERT_EQ(t->points.size(), 3u);
  EXPECT_EQ(t->points[0].result.run.run_id, 2);
  EXPECT_EQ(t->points[0].budget_used.at("y"), 2.0);
  EXPECT_FALSE(t->points[0].passed.at("y"));
  EXPECT_EQ(t->points[1].budget_used.at("y"), 3.0);
  EXPECT_EQ(t->points[2].budget_used.count("y"), 0u);  // the TIMEOUT has no outputs
  auto all = budget_trend(*db_, "c1", "y", 30);
  ASSERT_TRUE(all);
  ASSERT_EQ(all->points.size(), 4u);
  EXPECT_EQ(all->points[0].budget_used.at("y"), 0.5);
  // 0.5, 2, 3 over [0.5, 3]: steps of 2.5/7 -> 0, 4.2 -> 4, 7; the TIMEOUT is blank.
  EXPECT_NE(trend_text(*all).find("\ny  ▁▅█ \n"), std::string::npos) << trend_text(*all);
}

TEST_F(HistoryQueryTest, TrendOfAnUnknownCaseOrOutputIsAnError) {
  auto unknown = budget_trend(*db_, "nope", "", 30);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.status().message(), file_ + ": no results for case 'nope'");
  auto output = budget_trend(*db_, "c1", "z", 30);
  ASSERT_FALSE(output);
  EXPECT_EQ(output.status().message(), file_ + ": case 'c1' has no output 'z' in its last 4 result(s) (outputs: y)");
}

TEST_F(HistoryQueryTest, FirstBadAndTheRevsAroundIt) {
  auto c1 = first_bad(*db_, "c1");
  ASSERT_TRUE(c1);
  ASSERT_TRUE(c1->first_bad && c1->last_good);
  EXPECT_EQ(c1->first_bad->run.run_id, 2);
  EXPECT_EQ(c1->last_good->run.run_id, 1);
  EXPECT_EQ(c1->streak, 3);
  auto c3 = first_bad(*db_, "c3");
  ASSERT_TRUE(c3 && c3->first_bad && c3->last_good);
  EXPECT_EQ(c3->first_bad->run.run_id, 4);
  EXPECT_EQ(c3->first_bad->run.kernel_rev, "B");
  EXPECT_EQ(c3->last_good->run.run_id, 2);  // run 3 SKIPPED says nothing
  EXPECT_EQ(c3->last_good->run.kernel_rev, "A");
  EXPECT_NE(first_bad_text(*c3).find("  kernel revs: last good A, first bad B\n"), std::string::npos);
  auto c2 = first_bad(*db_, "c2");
  ASSERT_TRUE(c2);
  EXPECT_FALSE(c2->first_bad);
  EXPECT_EQ(first_bad_text(*c2), "c2: not failing (latest: PASSED in run 4 (2026-11-04T00:00:00Z, kernel rev B, emu, "
                                 "interrupted))\n");
}

TEST_F(HistoryQueryTest, ARunWhoseProcessIsAliveHereIsRunning) {
  auto rec = HistoryRecorder::open(file_);
  ASSERT_TRUE(rec);
  RunMeta m;
  m.harness_version = "test";
  m.backend = "emu";
  ASSERT_TRUE((*rec)->begin_run(m).is_ok());  // this host, this process
  ASSERT_TRUE((*rec)->record(make_case("c2", "FAILED")).is_ok());
  auto fb = first_bad(*db_, "c2");
  ASSERT_TRUE(fb && fb->first_bad);
  EXPECT_EQ(fb->first_bad->run.run_id, 6);
  EXPECT_EQ(fb->first_bad->run.state, "running");
}

}  // namespace
}  // namespace opgate::history
