// Properties over every operator's generator: a generated case is a valid call, round-trips
// through its JSON form, and passes on the emulator — and a failure shrinks to a minimal case whose
// JSON is printed, ready to paste into a case file.
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include "core/backend.h"
#include "core/case.h"
#include "core/op_registry.h"
#include "cases/generate.h"
#include "harness/runner.h"
#include "tests/cases/rc_chooser.h"

namespace opgate {
namespace {

Case generated_case(const OpInfo& op) {
  testing::RcChooser chooser;
  Case c;
  c.op = op.stem;
  c.id = op.short_name + ".generated";
  c.params = op.generate(chooser);
  c.seed = static_cast<uint64_t>(*rc::gen::inRange<int64_t>(1, 1 << 20));
  c.fill = *rc::gen::element(FillMode::kExact, FillMode::kRealistic, FillMode::kAdversarial);
  return c;
}

class GeneratedCasesProps : public ::testing::TestWithParam<const OpInfo*> {};

TEST_P(GeneratedCasesProps, generated_case_is_valid_and_round_trips) {
  const OpInfo& op = *GetParam();
  const auto result = rc::check([&] {
    const Case c = generated_case(op);
    RC_LOG() << case_to_json(c).dump() << "\n";
    auto problem = make_problem(c);
    RC_ASSERT(problem.has_value());
    RC_ASSERT((*problem)->validate().is_ok());
    // The resolved params parse back to the same problem.
    Case again = c;
    again.params = (*problem)->params_json();
    auto reparsed = make_problem(again);
    RC_ASSERT(reparsed.has_value());
    RC_ASSERT((*reparsed)->params_json() == (*problem)->params_json());
  });
  EXPECT_TRUE(result);
}

TEST_P(GeneratedCasesProps, generated_case_passes_on_emu) {
  const OpInfo& op = *GetParam();
  auto backend = make_backend("emu");
  ASSERT_TRUE(backend.has_value());
  RunOptions opt;
  opt.isolate = false;
  const auto result = rc::check([&] {
    const Case c = generated_case(op);
    RC_LOG() << "case: " << case_to_json(c).dump() << "\n";
    const CaseResult r = run_case(c, **backend, opt);
    RC_LOG() << verdict_name(r.verdict) << ": " << r.reason << "\n";
    RC_CLASSIFY(r.verdict == Verdict::kMistrusted, "mistrusted (degenerate data)");
    RC_ASSERT(r.verdict == Verdict::kPassed || r.verdict == Verdict::kMistrusted);
  });
  EXPECT_TRUE(result);
}

// Every mode-like value the hand-written ci tier uses (strings, booleans, and integer params
// with at most four small distinct values, such as dropPadMode) must appear among 1,000
// generated cases, and so must every fill mode: the generator is not stuck in a corner.
class GeneratedCoverage : public ::testing::TestWithParam<const OpInfo*> {};

TEST_P(GeneratedCoverage, thousand_cases_cover_every_ci_feature) {
  const OpInfo& op = *GetParam();
  auto ci = load_case_file(std::string(OPGATE_SOURCE_DIR) + "/cases/" + op.stem + "/ci.json");
  ASSERT_TRUE(ci.has_value()) << ci.status().message();
  std::map<std::string, std::set<std::string>> wanted;
  std::map<std::string, std::set<int64_t>> int_values;
  for (const auto& c : *ci) {
    auto problem = make_problem(c);
    ASSERT_TRUE(problem.has_value());
    const nlohmann::json params = (*problem)->params_json();
    for (auto it = params.begin(); it != params.end(); ++it) {
      if (it.value().is_string() || it.value().is_boolean()) wanted[it.key()].insert(feature_value(it.value()));
      if (it.value().is_number_integer()) int_values[it.key()].insert(it.value().get<int64_t>());
    }
  }
  for (const auto& [key, values] : int_values) {
    const bool small = values.size() <= 4 && *values.rbegin() <= 8 && *values.begin() >= 0;
    if (small) {
      for (int64_t v : values) wanted[key].insert(feature_value(v));
    }
  }
  wanted["fill"] = {"exact", "realistic", "adversarial"};
  auto generated = generate_cases(op, 1000, 2024, SizeClass::kMedium);
  ASSERT_TRUE(generated.has_value()) << generated.status().message();
  const FeatureStats stats = feature_stats(*generated);
  for (const auto& [key, values] : wanted) {
    for (const auto& v : values) {
      const auto f = stats.find(key);
      EXPECT_TRUE(f != stats.end() && f->second.count(v) > 0)
          << op.stem << ": ci.json uses " << key << " = " << v << " but 1,000 generated cases never do";
    }
  }
}

TEST_P(GeneratedCoverage, same_seed_same_cases) {
  const OpInfo& op = *GetParam();
  auto a = generate_cases(op, 30, 77, SizeClass::kSmall);
  auto b = generate_cases(op, 30, 77, SizeClass::kSmall);
  ASSERT_TRUE(a.has_value() && b.has_value());
  for (size_t i = 0; i < a->size(); ++i) EXPECT_EQ(case_to_json((*a)[i]), case_to_json((*b)[i]));
}

TEST_P(GeneratedCoverage, skipped_draws_are_counted_and_do_not_change_the_cases) {
  const OpInfo& op = *GetParam();
  GenerateSkips small, large;
  auto a = generate_cases(op, 30, 77, SizeClass::kSmall, &small);
  auto b = generate_cases(op, 30, 77, SizeClass::kSmall);
  ASSERT_TRUE(a.has_value() && b.has_value());
  for (size_t i = 0; i < a->size(); ++i) EXPECT_EQ(case_to_json((*a)[i]), case_to_json((*b)[i]));
  EXPECT_EQ(small.draws, 30 + small.skipped());
  // A larger budget never skips more of the same draws for size.
  ASSERT_TRUE(generate_cases(op, 30, 77, SizeClass::kLarge, &large).has_value());
  EXPECT_EQ(large.draws, 30 + large.skipped());
  EXPECT_LE(large.over_budget, small.over_budget);
}

TEST(GenerateSkips, the_line_names_every_reason) {
  GenerateSkips s;
  s.draws = 10;
  s.unparsed = 1;
  s.invalid = 2;
  s.over_budget = 3;
  EXPECT_EQ(skips_line("op", 4, s, SizeClass::kSmall),
            "op: 4 generated case(s) from 10 draw(s) (skipped 6: 1 unparsed, 2 invalid call(s), 3 over the budget of "
            "16384 input elements)");
  EXPECT_EQ(skips_line("op", 4, GenerateSkips{4, 0, 0, 0}, SizeClass::kSmall),
            "op: 4 generated case(s) from 4 draw(s), none skipped");
}

std::vector<const OpInfo*> ops() {
  std::vector<const OpInfo*> v;
  for (const auto& op : all_ops()) v.push_back(&op);
  return v;
}

std::string stem_name(const ::testing::TestParamInfo<const OpInfo*>& i) { return i.param->stem; }
INSTANTIATE_TEST_SUITE_P(AllOps, GeneratedCasesProps, ::testing::ValuesIn(ops()), stem_name);
INSTANTIATE_TEST_SUITE_P(AllOps, GeneratedCoverage, ::testing::ValuesIn(ops()), stem_name);

}  // namespace
}  // namespace opgate
