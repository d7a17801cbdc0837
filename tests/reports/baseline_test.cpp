// Baseline comparison: every change class from hand-made results, the drift thresholds at their
// edges, the gate policies, and accept/read of baseline folders (what accept refuses and records).
#include "reports/baseline.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "core/npy.h"

namespace opgate {
namespace {

// One result whose single output "y" used `budget` of its tolerance.
CaseResult result(const std::string& id, Verdict v, double budget = 0.0, const std::string& op = "op_a",
                  const std::string& tier = "ci") {
  CaseResult r;
  r.id = id;
  r.op = op;
  r.tier = tier;
  r.verdict = v;
  r.reason = std::string("reason of ") + id;
  OutputResult y;
  y.compare.name = "y";
  y.compare.passed = v != Verdict::kFailed;
  y.compare.metrics.budget_used = budget;
  r.outputs = {y};
  return r;
}

const BaselineFinding* find(const BaselineDiff& d, const std::string& id) {
  for (const auto& f : d.findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

const BaselineScope kAll = [](const CaseResult&) { return true; };

TEST(Baseline, classifies_every_change) {
  const std::vector<CaseResult> before = {
      result("a.pass_then_fail", Verdict::kPassed),   result("b.fail_then_fail", Verdict::kFailed),
      result("c.fail_then_crash", Verdict::kFailed),  result("d.fail_then_pass", Verdict::kFailed),
      result("e.pass_then_skip", Verdict::kPassed),   result("f.gone", Verdict::kPassed),
      result("g.same", Verdict::kPassed, 0.5),
  };
  const std::vector<CaseResult> now = {
      result("a.pass_then_fail", Verdict::kFailed),  result("b.fail_then_fail", Verdict::kFailed),
      result("c.fail_then_crash", Verdict::kCrashed), result("d.fail_then_pass", Verdict::kPassed),
      result("e.pass_then_skip", Verdict::kSkipped), result("g.same", Verdict::kPassed, 0.5),
      result("h.new_pass", Verdict::kPassed),        result("i.new_fail", Verdict::kTimeout),
  };
  const BaselineDiff d = diff_with_baseline(before, now, BaselineOptions{}, kAll);
  auto change_of = [&](const std::string& id) {
    const BaselineFinding* f = find(d, id);
    return f ? std::string(baseline_change_name(f->change)) : std::string("(none)");
  };
  EXPECT_EQ(change_of("a.pass_then_fail"), "NEW_FAILURE");
  EXPECT_EQ(change_of("b.fail_then_fail"), "STILL_FAILING");
  EXPECT_EQ(change_of("c.fail_then_crash"), "NEW_FAILURE");  // a different failure is news
  EXPECT_EQ(change_of("d.fail_then_pass"), "FIXED");
  EXPECT_EQ(change_of("e.pass_then_skip"), "CHANGED");
  EXPECT_EQ(change_of("f.gone"), "MISSING");
  EXPECT_EQ(change_of("g.same"), "(none)");
  EXPECT_EQ(change_of("h.new_pass"), "NEW_CASE");
  EXPECT_EQ(change_of("i.new_fail"), "NEW_FAILURE");
  EXPECT_EQ(d.unchanged, 1);
  EXPECT_EQ(d.findings.size(), 8u);
  // Most serious first: the two new failures lead, in id order.
  EXPECT_EQ(d.findings[0].id, "a.pass_then_fail");
  EXPECT_EQ(d.findings[1].id, "c.fail_then_crash");
  EXPECT_EQ(d.findings[2].id, "i.new_fail");
  EXPECT_EQ(d.findings[3].change, BaselineChange::kMissing);
  EXPECT_EQ(find(d, "f.gone")->after, "");
  EXPECT_EQ(find(d, "h.new_pass")->before, "");
}

TEST(Baseline, out_of_scope_cases_are_not_missing) {
  const std::vector<CaseResult> before = {result("x.1", Verdict::kPassed, 0, "op_a"),
                                          result("y.1", Verdict::kPassed, 0, "op_b"),
                                          result("x.2", Verdict::kPassed, 0, "op_a", "nightly")};
  const BaselineScope only_a_ci = [](const CaseResult& b) { return b.op == "op_a" && b.tier == "ci"; };
  const BaselineDiff d = diff_with_baseline(before, {}, BaselineOptions{}, only_a_ci);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].id, "x.1");
  EXPECT_EQ(d.findings[0].change, BaselineChange::kMissing);
}

// Drift needs both: growth by more than drift_factor (2) and an end above drift_floor (0.25).
TEST(Baseline, drift_needs_growth_and_floor) {
  struct Row {
    double before, after;
    bool drift;
  };
  const Row rows[] = {
      {0.10, 0.30, true},    // x3 and above the floor
      {0.20, 0.30, false},   // x1.5
      {0.05, 0.20, false},   // x4 but below the floor
      {0.00, 0.26, true},    // from exact to a quarter of the tolerance
      {0.125, 0.25, false},  // exactly x2 and exactly at the floor: both thresholds are strict
      {0.50, 0.10, false},   // improved
  };
  for (const Row& row : rows) {
    const BaselineDiff d = diff_with_baseline({result("c", Verdict::kPassed, row.before)},
                                              {result("c", Verdict::kPassed, row.after)}, BaselineOptions{}, kAll);
    EXPECT_EQ(d.count(BaselineChange::kDrift), row.drift ? 1 : 0) << row.before << " -> " << row.after;
    if (row.drift) {
      EXPECT_NE(d.findings[0].detail.find("y: tolerance used"), std::string::npos) << d.findings[0].detail;
    }
  }
}

TEST(Baseline, drift_thresholds_are_options) {
  BaselineOptions tight;
  tight.drift_factor = 1.1;
  tight.drift_floor = 0.0;
  const BaselineDiff d = diff_with_baseline({result("c", Verdict::kPassed, 0.10)},
                                            {result("c", Verdict::kPassed, 0.12)}, tight, kAll);
  EXPECT_EQ(d.count(BaselineChange::kDrift), 1);
}

TEST(Baseline, exit_code_follows_the_policy) {
  const std::vector<CaseResult> before = {result("known", Verdict::kFailed), result("p", Verdict::kPassed, 0.1)};
  const std::vector<CaseResult> known_only = {result("known", Verdict::kFailed), result("p", Verdict::kPassed, 0.1)};
  const std::vector<CaseResult> drifted = {result("known", Verdict::kFailed), result("p", Verdict::kPassed, 0.9)};
  const std::vector<CaseResult> regressed = {result("known", Verdict::kFailed), result("p", Verdict::kFailed)};
  const std::vector<CaseResult> lost = {result("known", Verdict::kFailed)};
  BaselinePolicy plain, lenient, drift_gate;
  lenient.allow_known_failures = true;
  drift_gate.allow_known_failures = true;
  drift_gate.fail_on_drift = true;
  auto code = [&](const std::vector<CaseResult>& now, const BaselinePolicy& p) {
    return baseline_exit_code(now, diff_with_baseline(before, now, BaselineOptions{}, kAll), p);
  };
  EXPECT_EQ(code(known_only, plain), 1);  // a failure is a failure unless the policy says otherwise
  EXPECT_EQ(code(known_only, lenient), 0);
  EXPECT_EQ(code(drifted, lenient), 0);
  EXPECT_EQ(code(drifted, drift_gate), 1);
  EXPECT_EQ(code(regressed, lenient), 1);
  EXPECT_EQ(code(lost, lenient), 1);
}

TEST(Baseline, mistrusted_counts_as_failing_only_when_strict) {
  const std::vector<CaseResult> before = {result("m", Verdict::kPassed)};
  const std::vector<CaseResult> now = {result("m", Verdict::kMistrusted)};
  BaselineOptions strict;
  strict.strict = true;
  EXPECT_EQ(diff_with_baseline(before, now, BaselineOptions{}, kAll).count(BaselineChange::kChanged), 1);
  EXPECT_EQ(diff_with_baseline(before, now, strict, kAll).count(BaselineChange::kNewFailure), 1);
}

TEST(Baseline, text_and_json_name_every_finding) {
  const BaselineDiff d = diff_with_baseline({result("a", Verdict::kPassed)}, {result("a", Verdict::kFailed)},
                                            BaselineOptions{}, kAll);
  const std::string text = baseline_text(d, "base/");
  EXPECT_NE(text.find("baseline base/: new_failure:1 missing:0"), std::string::npos) << text;
  EXPECT_NE(text.find("NEW_FAILURE"), std::string::npos);
  EXPECT_NE(text.find("reason of a"), std::string::npos);
  const nlohmann::json j = to_json(d);
  EXPECT_EQ(j["counts"]["NEW_FAILURE"], 1);
  EXPECT_EQ(j["findings"][0]["before"], "PASSED");
  EXPECT_EQ(j["findings"][0]["after"], "FAILED");
}

class BaselineFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/opgate_baseline_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& rel, const std::string& text) {
    ASSERT_TRUE(make_dirs(dir_ + "/" + rel.substr(0, rel.rfind('/'))).is_ok());
    std::ofstream(dir_ + "/" + rel) << text;
  }
  std::string dir_;
};

TEST_F(BaselineFiles, accept_copies_results_and_records_origin) {
  const std::string line = to_json(result("a", Verdict::kPassed)).dump() + "\n";
  write("report/results.jsonl", line + to_json(result("b", Verdict::kFailed)).dump() + "\n");
  ASSERT_TRUE(accept_baseline(dir_ + "/report", dir_ + "/base/nested", "9.9").is_ok());
  auto read = read_baseline(dir_ + "/base/nested");
  ASSERT_TRUE(read) << read.status().message();
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[1].verdict, Verdict::kFailed);
  auto manifest = read_file(dir_ + "/base/nested/baseline.json");
  ASSERT_TRUE(manifest);
  const auto m = nlohmann::json::parse(*manifest);
  EXPECT_EQ(m["cases"], 2);
  EXPECT_EQ(m["verdicts"]["FAILED"], 1);
  EXPECT_EQ(m["harness_version"], "9.9");
  // A results.jsonl path works as well as its folder.
  EXPECT_TRUE(read_baseline(dir_ + "/base/nested/results.jsonl"));
}

TEST_F(BaselineFiles, accept_refuses_empty_or_corrupt_reports_and_keeps_the_old_baseline) {
  write("good/results.jsonl", to_json(result("a", Verdict::kPassed)).dump() + "\n");
  ASSERT_TRUE(accept_baseline(dir_ + "/good", dir_ + "/base", "1").is_ok());
  write("empty/results.jsonl", "");
  EXPECT_FALSE(accept_baseline(dir_ + "/empty", dir_ + "/base", "1").is_ok());
  write("corrupt/results.jsonl", R"({"id": "a", "verdict": "MAYBE"})" "\n");
  const Status st = accept_baseline(dir_ + "/corrupt", dir_ + "/base", "1");
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("MAYBE"), std::string::npos) << st.message();
  // A line that is not JSON at all, between two good ones, is corruption too (not a crash's cut).
  const std::string good = to_json(result("b", Verdict::kPassed)).dump() + "\n";
  write("garbled/results.jsonl", good + "not json\n" + good);
  const Status garbled = accept_baseline(dir_ + "/garbled", dir_ + "/base", "1");
  EXPECT_FALSE(garbled.is_ok());
  EXPECT_NE(garbled.message().find("garbled/results.jsonl: line 2: malformed JSON"), std::string::npos)
      << garbled.message();
  auto kept = read_baseline(dir_ + "/base");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->size(), 1u);
}

TEST_F(BaselineFiles, read_names_a_missing_baseline) {
  auto r = read_baseline(dir_ + "/nowhere");
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("nowhere: no such baseline"), std::string::npos);
  ASSERT_TRUE(make_dirs(dir_ + "/not_a_report").is_ok());
  auto r2 = read_baseline(dir_ + "/not_a_report");
  ASSERT_FALSE(r2);
  EXPECT_NE(r2.status().message().find("results.jsonl: missing"), std::string::npos);
}

const nlohmann::json kRun{{"backend", {{"backend", "emu"}, {"device", "CPU"}}}, {"repeat", 2}, {"against", "golden"},
                          {"cases", 2}};

TEST_F(BaselineFiles, accept_records_the_runs_configuration_and_an_absolute_origin) {
  write("report/results.jsonl", to_json(result("a", Verdict::kPassed)).dump() + "\n" +
                                    to_json(result("b", Verdict::kPassed)).dump() + "\n");
  write("report/run.json", kRun.dump());
  // The results.jsonl stands for its folder.
  const Status st = accept_baseline(dir_ + "/report/results.jsonl", dir_ + "/base", "1");
  ASSERT_TRUE(st.is_ok()) << st.message();
  const auto m = nlohmann::json::parse(*read_file(dir_ + "/base/baseline.json"));
  EXPECT_EQ(m["backend"], "emu");
  EXPECT_EQ(m["repeat"], 2);
  EXPECT_EQ(m["against"], "golden");
  EXPECT_EQ(m["accepted_from"], std::filesystem::absolute(dir_ + "/report").lexically_normal().string());
  // A relative report path is recorded absolute too.
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir_);
  const Status relative = accept_baseline("report/", dir_ + "/base2", "1");
  std::filesystem::current_path(cwd);
  ASSERT_TRUE(relative.is_ok()) << relative.message();
  const auto m2 = nlohmann::json::parse(*read_file(dir_ + "/base2/baseline.json"));
  EXPECT_EQ(m2["accepted_from"], std::filesystem::absolute(dir_ + "/report").lexically_normal().string());
}

TEST_F(BaselineFiles, accept_refuses_an_unfinished_run_or_a_single_shard) {
  write("good/results.jsonl", to_json(result("a", Verdict::kPassed)).dump() + "\n");
  ASSERT_TRUE(accept_baseline(dir_ + "/good", dir_ + "/base", "1").is_ok());
  const std::string one = to_json(result("x", Verdict::kPassed)).dump() + "\n";
  write("cut/results.jsonl", one);
  write("cut/run.json", kRun.dump());  // selected 2 cases, holds 1
  const Status cut = accept_baseline(dir_ + "/cut", dir_ + "/base", "1");
  ASSERT_FALSE(cut.is_ok());
  EXPECT_EQ(cut.message().rfind(dir_ + "/cut: unfinished run: 1 of 2 cases have results", 0), 0u) << cut.message();
  nlohmann::json shard = kRun;
  shard["cases"] = 1;
  shard["shard"] = "0/2";
  write("shard/results.jsonl", one);
  write("shard/run.json", shard.dump());
  const Status sh = accept_baseline(dir_ + "/shard", dir_ + "/base", "1");
  ASSERT_FALSE(sh.is_ok());
  EXPECT_NE(sh.message().find("shard/run.json: a single shard"), std::string::npos) << sh.message();
  EXPECT_NE(sh.message().find("opgate merge"), std::string::npos) << sh.message();
  auto kept = read_baseline(dir_ + "/base");
  ASSERT_TRUE(kept);
  ASSERT_EQ(kept->size(), 1u);
  EXPECT_EQ((*kept)[0].id, "a");
}

TEST_F(BaselineFiles, another_backend_or_against_is_a_warning) {
  write("report/results.jsonl", to_json(result("a", Verdict::kPassed)).dump() + "\n" +
                                    to_json(result("b", Verdict::kPassed)).dump() + "\n");
  write("report/run.json", kRun.dump());
  ASSERT_TRUE(accept_baseline(dir_ + "/report", dir_ + "/base", "1").is_ok());
  nlohmann::json same = kRun;
  same["backend"]["device"] = "other details";
  same["repeat"] = 1;  // not warned about
  write("same/run.json", same.dump());
  EXPECT_EQ(*baseline_config_mismatch(dir_ + "/base", dir_ + "/same"), "");
  EXPECT_EQ(*baseline_config_mismatch(dir_ + "/base/results.jsonl", dir_ + "/same"), "");
  nlohmann::json other = kRun;
  other["backend"]["backend"] = "fault:x";
  other["against"] = "reference";
  write("other/run.json", other.dump());
  const auto warning = baseline_config_mismatch(dir_ + "/base", dir_ + "/other");
  ASSERT_TRUE(warning) << warning.status().message();
  EXPECT_EQ(*warning, dir_ + "/base/baseline.json: the baseline has backend \"emu\", against \"golden\", but " +
                          dir_ + "/other/run.json has backend \"fault:x\", against \"reference\": results of "
                          "different configurations are compared");
  // Nothing recorded on either side: nothing to say.
  EXPECT_EQ(*baseline_config_mismatch(dir_ + "/other", dir_ + "/base"), "");
}

}  // namespace
}  // namespace opgate
