// The results serializer and parser are inverses: a CaseResult with every recorded field set to a
// distinct value (non-finite metrics included) comes back field for field from its JSON, through
// the text a results.jsonl line holds; wrong types are errors naming the field; missing fields
// keep their defaults.
#include "core/result_json.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

namespace opgate {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Equal as numbers, or both NaN (a NaN is never == itself).
void expect_same_number(double a, double b, const char* what) {
  if (std::isnan(a)) {
    EXPECT_TRUE(std::isnan(b)) << what << ": " << b;
  } else {
    EXPECT_EQ(a, b) << what;
  }
}

void expect_same_point(const ComparePoint& a, const ComparePoint& b) {
  EXPECT_EQ(a.index, b.index);
  expect_same_number(a.expected, b.expected, "expected");
  expect_same_number(a.expected_rounded, b.expected_rounded, "expected_rounded");
  expect_same_number(a.got, b.got, "got");
  expect_same_number(a.abs_err, b.abs_err, "abs_err");
  expect_same_number(a.rel_err, b.rel_err, "rel_err");
  expect_same_number(a.allowed, b.allowed, "allowed");
  EXPECT_EQ(a.interval, b.interval);
  expect_same_number(a.accepted_lo, b.accepted_lo, "accepted_lo");
  expect_same_number(a.accepted_hi, b.accepted_hi, "accepted_hi");
  EXPECT_EQ(a.poison, b.poison);
  EXPECT_EQ(a.where, b.where);
}

void expect_same_metrics(const CompareMetrics& a, const CompareMetrics& b) {
  EXPECT_EQ(a.elements, b.elements);
  EXPECT_EQ(a.compared, b.compared);
  EXPECT_EQ(a.mismatches, b.mismatches);
  EXPECT_EQ(a.poison_left, b.poison_left);
  EXPECT_EQ(a.determined, b.determined);
  expect_same_number(a.max_abs, b.max_abs, "max_abs");
  expect_same_number(a.max_rel, b.max_rel, "max_rel");
  expect_same_number(a.mere, b.mere, "mere");
  expect_same_number(a.mare, b.mare, "mare");
  expect_same_number(a.rmse, b.rmse, "rmse");
  expect_same_number(a.error_balance, b.error_balance, "error_balance");
  EXPECT_EQ(a.balance_pos, b.balance_pos);
  EXPECT_EQ(a.balance_neg, b.balance_neg);
  EXPECT_EQ(a.balance_away, b.balance_away);
  EXPECT_EQ(a.balance_toward, b.balance_toward);
  expect_same_number(a.balance_limit, b.balance_limit, "balance_limit");
  expect_same_number(a.cosine, b.cosine, "cosine");
  EXPECT_EQ(a.ulp_hist, b.ulp_hist);
  expect_same_number(a.max_ulp, b.max_ulp, "max_ulp");
  expect_same_number(a.budget_used, b.budget_used, "budget_used");
  EXPECT_EQ(a.axis_rows, b.axis_rows);
  ASSERT_EQ(a.axis_budget.size(), b.axis_budget.size());
  for (size_t k = 0; k < a.axis_budget.size(); ++k) expect_same_number(a.axis_budget[k], b.axis_budget[k], "axis_budget");
}

void expect_same_plan(const OutputCheck& a, const OutputCheck& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.device_dtype, b.device_dtype);
  EXPECT_EQ(a.tol.standard, b.tol.standard);
  EXPECT_EQ(a.tol.c, b.tol.c);
  EXPECT_EQ(a.tol.u_acc, b.tol.u_acc);
  EXPECT_EQ(a.tol.out_ulps, b.tol.out_ulps);
  EXPECT_EQ(a.tol.rtol, b.tol.rtol);
  EXPECT_EQ(a.tol.atol, b.tol.atol);
  EXPECT_EQ(a.tol.max_bad_fraction, b.tol.max_bad_fraction);
  EXPECT_EQ(a.max_steps, b.max_steps);
  EXPECT_EQ(a.balance_cluster, b.balance_cluster);
  EXPECT_EQ(a.reason, b.reason);
}

void expect_same_output(const OutputResult& a, const OutputResult& b) {
  expect_same_plan(a.plan, b.plan);
  EXPECT_EQ(a.compare.name, b.compare.name);
  EXPECT_EQ(a.compare.kind, b.compare.kind);
  EXPECT_EQ(a.compare.standard, b.compare.standard);
  EXPECT_EQ(a.compare.passed, b.compare.passed);
  EXPECT_EQ(a.compare.message, b.compare.message);
  EXPECT_EQ(a.compare.axis_name, b.compare.axis_name);
  expect_same_metrics(a.compare.metrics, b.compare.metrics);
  ASSERT_EQ(a.compare.first_failures.size(), b.compare.first_failures.size());
  for (size_t i = 0; i < a.compare.first_failures.size(); ++i) {
    expect_same_point(a.compare.first_failures[i], b.compare.first_failures[i]);
  }
  ASSERT_EQ(a.compare.worst.size(), b.compare.worst.size());
  for (size_t i = 0; i < a.compare.worst.size(); ++i) expect_same_point(a.compare.worst[i], b.compare.worst[i]);
}

// A bound output whose every metric differs from every other and from its default; `twist`
// makes a second output differ from the first everywhere.
OutputResult bound_output(double twist) {
  OutputResult o;
  o.plan.name = "y";
  o.plan.kind = CheckKind::kTolerance;
  o.plan.device_dtype = DType::kBF16;
  o.plan.tol.standard = Standard::kBound;
  o.plan.tol.c = 3 + twist;
  o.plan.tol.u_acc = 0x1p-11;
  o.plan.tol.out_ulps = 1.5;
  o.plan.balance_cluster = 16;
  o.plan.reason = "two roundings";
  CompareResult& c = o.compare;
  c.name = "y";
  c.kind = CheckKind::kTolerance;
  c.standard = "bound";
  c.passed = false;
  c.message = "3 of 10 compared elements outside bound";
  CompareMetrics& m = c.metrics;
  m.elements = 11;
  m.compared = 10;
  m.mismatches = 3;
  m.poison_left = 2;
  m.determined = 7;
  m.max_abs = 0.5 + twist;
  m.max_rel = kInf;
  m.mere = kNaN;
  m.mare = -kInf;
  m.rmse = 1e-300;
  m.error_balance = -0.2;
  m.balance_pos = 4;
  m.balance_neg = 6;
  m.balance_away = 1;
  m.balance_toward = 9;
  m.balance_limit = kInf;
  m.cosine = 0.1 + 0.2;  // not exactly 0.3: the text must carry all 17 digits
  m.ulp_hist = {1, 2, 3, 4, 5, 6, 7, INT64_MAX};
  m.max_ulp = 9;
  m.budget_used = 1.5;
  m.axis_rows = 3;
  m.axis_budget = {0.25, 1e6, 0.1 + 0.2};
  c.axis_name = "expert";  // report.html's name for the strip's axis
  ComparePoint p;
  p.index = {1, 2, 3};
  p.expected = 1.5;
  p.expected_rounded = 1.25;
  p.got = kNaN;
  p.abs_err = kInf;
  p.rel_err = 0.75;
  p.allowed = 0.0625;
  p.interval = true;
  p.accepted_lo = -kInf;
  p.accepted_hi = 2.5;
  p.poison = true;
  p.where = "row 1, col 2";
  c.first_failures = {p};
  ComparePoint q;
  q.index = {0};
  q.expected = -2;
  q.got = 3;
  c.worst = {q, p};
  return o;
}

CaseResult full_result() {
  CaseResult r;
  r.id = "op.case.bf16.001";
  r.op = "op_stem";
  r.tier = "ci";
  r.backend = "fault:op.defect";
  r.verdict = Verdict::kFailed;
  r.reason = "y: 3 of 10 compared elements outside bound";
  r.repro = "opgate repro cases/op/ci.json --id op.case.bf16.001 --backend emu";
  r.outputs = {bound_output(0), bound_output(1)};
  OutputResult q;
  q.plan.name = q.compare.name = "idx";
  q.plan.kind = q.compare.kind = CheckKind::kQuantized;
  q.plan.device_dtype = DType::kI8;
  q.plan.max_steps = 2;
  q.compare.standard = "quantized";
  r.outputs.push_back(q);
  OutputResult a;
  a.plan.name = a.compare.name = "z";
  a.plan.kind = a.compare.kind = CheckKind::kTolerance;
  a.plan.tol.standard = Standard::kAllclose;
  a.plan.tol.rtol = 0.01;
  a.plan.tol.atol = 0.002;
  a.plan.tol.max_bad_fraction = 0.25;
  a.compare.standard = "allclose";
  r.outputs.push_back(a);
  r.case_json = {{"id", r.id}, {"params", {{"R", 4}}}};
  r.warnings = {"first warning", "second"};
  r.repeats = 3;
  r.determinism_checked = true;
  r.fill_ms = 0.25;
  r.reference_ms = 1.5;
  r.device_ms = 2.75;
  r.total_ms = 5.125;
  // Distinct binary fractions per stage, so a key read into the wrong member shows.
  r.stages_ms.parse = 0.5;
  r.stages_ms.validate = 0.75;
  r.stages_ms.fill = 1.25;
  r.stages_ms.reference = 2.5;
  r.stages_ms.pack = 3.25;
  r.stages_ms.golden = 4.5;
  r.stages_ms.plan = 4.75;
  r.stages_ms.device = 5.75;
  r.stages_ms.guards = 6.25;
  r.stages_ms.unpack = 7.5;
  r.stages_ms.compare = 8.75;
  r.stages_ms.twin = 9.0;
  r.stages_ms.vacuity = 9.25;
  r.stages_ms.determinism = 10.5;
  r.stages_ms.transfer = 11.75;
  return r;
}

// Through the text, as a results.jsonl line or the child's pipe carries it.
CaseResult round_trip(const CaseResult& r) {
  const std::string line = to_json(r).dump();
  auto back = case_result_from_json(nlohmann::json::parse(line));
  EXPECT_TRUE(back) << back.status().message();
  return back ? *back : CaseResult{};
}

TEST(ResultJson, every_field_round_trips) {
  const CaseResult r = full_result();
  const CaseResult back = round_trip(r);
  EXPECT_EQ(back.id, r.id);
  EXPECT_EQ(back.op, r.op);
  EXPECT_EQ(back.tier, r.tier);
  EXPECT_EQ(back.backend, r.backend);
  EXPECT_EQ(back.verdict, r.verdict);
  EXPECT_EQ(back.reason, r.reason);
  EXPECT_EQ(back.repro, r.repro);
  EXPECT_EQ(back.case_json, r.case_json);
  EXPECT_EQ(back.warnings, r.warnings);
  EXPECT_EQ(back.repeats, 3);
  EXPECT_TRUE(back.determinism_checked);
  EXPECT_EQ(back.fill_ms, 0.25);
  EXPECT_EQ(back.reference_ms, 1.5);
  EXPECT_EQ(back.device_ms, 2.75);
  EXPECT_EQ(back.total_ms, 5.125);
  EXPECT_EQ(back.stages_ms.parse, 0.5);
  EXPECT_EQ(back.stages_ms.validate, 0.75);
  EXPECT_EQ(back.stages_ms.fill, 1.25);
  EXPECT_EQ(back.stages_ms.reference, 2.5);
  EXPECT_EQ(back.stages_ms.pack, 3.25);
  EXPECT_EQ(back.stages_ms.golden, 4.5);
  EXPECT_EQ(back.stages_ms.plan, 4.75);
  EXPECT_EQ(back.stages_ms.device, 5.75);
  EXPECT_EQ(back.stages_ms.guards, 6.25);
  EXPECT_EQ(back.stages_ms.unpack, 7.5);
  EXPECT_EQ(back.stages_ms.compare, 8.75);
  EXPECT_EQ(back.stages_ms.twin, 9.0);
  EXPECT_EQ(back.stages_ms.vacuity, 9.25);
  EXPECT_EQ(back.stages_ms.determinism, 10.5);
  EXPECT_EQ(back.stages_ms.transfer, 11.75);
  ASSERT_EQ(back.outputs.size(), r.outputs.size());
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    SCOPED_TRACE(i);
    expect_same_output(r.outputs[i], back.outputs[i]);
  }
  // The second trip writes the same text: nothing drifts through repeated reading and writing
  // (resume, merge and baselines rewrite results).
  EXPECT_EQ(to_json(back).dump(), to_json(r).dump());
}

// results.jsonl holds every stage under "stages_ms" by the names reports/README.md lists, and the
// older "ms" object as before.
TEST(ResultJson, stages_ms_holds_every_stage_by_name) {
  const nlohmann::json j = to_json(full_result());
  const nlohmann::json expected = {{"parse", 0.5},      {"validate", 0.75},    {"fill", 1.25},    {"reference", 2.5},
                                   {"pack", 3.25},      {"golden", 4.5},       {"plan", 4.75},    {"device", 5.75},
                                   {"guards", 6.25},    {"unpack", 7.5},       {"compare", 8.75}, {"twin", 9.0}, {"vacuity", 9.25},
                                   {"determinism", 10.5}, {"transfer", 11.75}};
  EXPECT_EQ(j.at("stages_ms"), expected);
  EXPECT_EQ(j.at("ms"), (nlohmann::json{{"fill", 0.25}, {"reference", 1.5}, {"device", 2.75}, {"total", 5.125}}));
}

// results.jsonl written before the `plan` stage existed (13 stages; the plan was timed into
// `compare`): every stage present is read, the plan reads as 0. Resume, merge and baselines read
// such folders.
TEST(ResultJson, stages_ms_without_plan_reads_the_plan_as_untimed) {
  auto r = case_result_from_json(nlohmann::json::parse(
      R"({"id": "a", "verdict": "PASSED", "stages_ms": {"parse": 1, "validate": 2, "fill": 3, "reference": 4,
          "pack": 5, "golden": 6, "device": 7, "guards": 8, "unpack": 9, "compare": 10, "vacuity": 11,
          "determinism": 12, "transfer": 13}})"));
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->stages_ms.plan, 0);
  EXPECT_EQ(r->stages_ms.golden, 6);
  EXPECT_EQ(r->stages_ms.device, 7);
  EXPECT_EQ(r->stages_ms.compare, 10);
  EXPECT_EQ(r->stages_ms.transfer, 13);
}

TEST(ResultJson, a_line_without_stages_ms_reads_as_untimed) {
  auto r = case_result_from_json(nlohmann::json::parse(R"({"id": "a", "verdict": "PASSED", "ms": {"total": 3}})"));
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_EQ(r->total_ms, 3);
  EXPECT_EQ(r->stages_ms.fill, 0);
  EXPECT_EQ(r->stages_ms.transfer, 0);
}

// Totals by hand: fill 1+3 = 4, reference 2+0 = 2, device 0+2 = 2, transfer 0 + 0 (left out);
// sum 8 ms, so 50 %, 25 %, 25 %; equal totals keep pipeline order (reference before device).
TEST(ResultJson, stage_time_line_sorts_the_totals_with_their_shares) {
  CaseResult a, b;
  a.stages_ms.fill = 1;
  a.stages_ms.reference = 2;
  b.stages_ms.fill = 3;
  b.stages_ms.device = 2;
  EXPECT_EQ(stage_time_line({a, b}),
            "where the time went: 0.008 s in stages: fill 0.004 s (50.0%), reference 0.002 s (25.0%), "
            "device 0.002 s (25.0%)\n");
  EXPECT_EQ(stage_time_line({CaseResult{}}), "");
  EXPECT_EQ(stage_time_line({}), "");
}

TEST(ResultJson, a_default_result_round_trips) {
  const CaseResult back = round_trip(CaseResult{});
  EXPECT_EQ(to_json(back).dump(), to_json(CaseResult{}).dump());
  EXPECT_TRUE(back.outputs.empty());
}

TEST(ResultJson, non_finite_metrics_are_strings_in_the_text) {
  const std::string line = to_json(full_result()).dump();
  EXPECT_NE(line.find(R"("max_rel":"inf")"), std::string::npos);
  EXPECT_NE(line.find(R"("mere":"nan")"), std::string::npos);
  EXPECT_NE(line.find(R"("mare":"-inf")"), std::string::npos);
  EXPECT_NE(line.find(R"("accepted":["-inf",2.5])"), std::string::npos);
  EXPECT_EQ(line.find("null"), std::string::npos);
}

TEST(ResultJson, missing_fields_keep_their_defaults) {
  // A line of an older version: an output with a name and a verdict only.
  auto r = case_result_from_json(nlohmann::json::parse(
      R"({"id": "a", "verdict": "PASSED", "outputs": [{"name": "y", "passed": false}]})"));
  ASSERT_TRUE(r) << r.status().message();
  ASSERT_EQ(r->outputs.size(), 1u);
  EXPECT_EQ(r->outputs[0].compare.name, "y");
  EXPECT_FALSE(r->outputs[0].compare.passed);
  EXPECT_EQ(r->outputs[0].compare.metrics.compared, 0);
  EXPECT_EQ(r->outputs[0].compare.metrics.cosine, 1.0);
  EXPECT_EQ(r->outputs[0].plan.kind, CheckKind::kExact);
}

// Each wrong type names the field it is in.
TEST(ResultJson, wrong_types_name_the_field) {
  const struct {
    const char* line;
    const char* names;
  } cases[] = {
      {R"({"id": "a", "verdict": "PASSED", "op": 5})", "field 'op': expected a string"},
      {R"({"id": "a", "verdict": "PASSED", "outputs": {}})", "field 'outputs': expected an array"},
      {R"({"id": "a", "verdict": "PASSED", "outputs": [[]]})", "outputs[0]"},
      {R"({"id": "a", "verdict": "PASSED", "outputs": [{"metrics": {"compared": 1.5}}]})",
       "field 'compared': expected an integer"},
      {R"({"id": "a", "verdict": "PASSED", "outputs": [{"metrics": {"max_abs": "big"}}]})",
       "field 'max_abs': expected a number"},
      {R"({"id": "a", "verdict": "PASSED", "outputs": [{"metrics": {"ulp_hist": [1, 2]}}]})",
       "field 'ulp_hist': expected an array of 8 integers"},
      {R"({"id": "a", "verdict": "PASSED", "outputs": [{"worst": [{"accepted": [1]}]}]})",
       "field 'accepted': expected [low, high]"},
      {R"({"id": "a", "verdict": "PASSED", "outputs": [{"plan": {"kind": "fuzzy"}}]})",
       "field 'kind': expected exact, tolerance, quantized or undefined"},
      {R"({"id": "a", "verdict": "PASSED", "outputs": [{"plan": {"dtype": "float7"}}]})", "field 'dtype'"},
      {R"({"id": "a", "verdict": "PASSED", "ms": {"total": "long"}})", "field 'total': expected a number"},
      {R"({"id": "a", "verdict": "PASSED", "stages_ms": {"fill": "slow"}})", "field 'fill': expected a number"},
      {R"({"id": "a", "verdict": "PASSED", "stages_ms": [1]})", "field 'stages_ms': expected an object"},
  };
  for (const auto& c : cases) {
    auto r = case_result_from_json(nlohmann::json::parse(c.line));
    ASSERT_FALSE(r) << c.line;
    EXPECT_NE(r.status().message().find(c.names), std::string::npos) << c.line << "\n" << r.status().message();
  }
}

TEST(ResultJson, number_text_is_the_json_text) {
  EXPECT_EQ(number_text(0.0), "0.0");
  EXPECT_EQ(number_text(25), "25.0");
  EXPECT_EQ(number_text(1e-7), "1e-07");
  EXPECT_EQ(number_text(kInf), "\"inf\"");
  EXPECT_EQ(number_text(-kInf), "\"-inf\"");
  EXPECT_EQ(number_text(kNaN), "\"nan\"");
}

}  // namespace
}  // namespace opgate
