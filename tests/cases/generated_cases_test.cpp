// Properties over every operator's generator: a generated case is a valid call, round-trips
// through its JSON form, and passes on the emulator — and a failure shrinks to a minimal case whose
// JSON is printed, ready to paste into a case file.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include "core/backend.h"
#include "core/case.h"
#include "core/op_registry.h"
#include "core/runner.h"
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

std::vector<const OpInfo*> ops() {
  std::vector<const OpInfo*> v;
  for (const auto& op : all_ops()) v.push_back(&op);
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllOps, GeneratedCasesProps, ::testing::ValuesIn(ops()),
                         [](const ::testing::TestParamInfo<const OpInfo*>& i) { return i.param->stem; });

}  // namespace
}  // namespace opgate
