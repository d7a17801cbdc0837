// The runner pipeline against misbehaving backends: each kernel failure mode maps to its verdict,
// and isolation turns crashes and hangs into CRASHED and TIMEOUT while the caller goes on.
#include "harness/runner.h"

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "cases/moe_finalize_routing_v2_grad.h"
#include "core/result_json.h"

namespace opgate {
namespace {

enum class Misbehave { kNone, kWriteBeforeBuffer, kWriteAfterBuffer, kLeavePoison, kFlipOnSecondRun,
                       kModifyInput, kFlipLastInputBit, kFail, kAbort, kHang, kWrongRejectCode, kCannotProbeRejection,
                       kRejectionProbeFails };

// The emulator, then one deliberate misbehaviour.
class TestBackend final : public Backend {
 public:
  explicit TestBackend(Misbehave m) : m_(m), emu_(std::move(make_backend("emu").value())) {}
  std::string name() const override { return "test"; }
  nlohmann::json probe() const override { return {}; }
  Support supports(const Problem&) const override { return {}; }
  Status run(const Problem& p, const TensorMap& in, TensorMap& out) override {
    ++runs_;
    if (m_ == Misbehave::kFail) return Status(StatusCode::kBackendError, "aclnn returned 561000: launch failed");
    if (m_ == Misbehave::kAbort) std::abort();
    if (m_ == Misbehave::kHang) {
      for (;;) pause();
    }
    Status st = emu_->run(p, in, out);
    Tensor& gx = out.at("gradExpandedXOut");
    switch (m_) {
      case Misbehave::kWriteBeforeBuffer: gx.data()[-3] ^= 0xFF; break;
      case Misbehave::kWriteAfterBuffer: gx.data()[gx.nbytes() + 1] ^= 0xFF; break;
      case Misbehave::kLeavePoison: gx.set_bits(0, 0x7FDEAD5Au); break;
      case Misbehave::kFlipOnSecondRun:
        if (runs_ == 2) gx.set_bits(1, gx.bits(1) ^ 1u);
        break;
      case Misbehave::kModifyInput: const_cast<Tensor&>(in.at("gradY")).set(0, 1234.0); break;
      case Misbehave::kFlipLastInputBit: {
        Tensor& gy = const_cast<Tensor&>(in.at("gradY"));
        gy.data()[gy.nbytes() - 1] ^= 0x01;
        break;
      }
      default: break;
    }
    return st;
  }
  int runs() const { return runs_; }
  Expected<int64_t> rejection_code(const Problem& p) override {
    if (m_ == Misbehave::kCannotProbeRejection) return Status(StatusCode::kUnsupported, "no probe on this entry");
    if (m_ == Misbehave::kRejectionProbeFails) return Status(StatusCode::kBackendError, "aclrtMalloc failed");
    return m_ == Misbehave::kWrongRejectCode ? int64_t{161001} : p.validate().aclnn_code();
  }

 private:
  Misbehave m_;
  std::unique_ptr<Backend> emu_;
  int runs_ = 0;
};

Case valid_case() {
  Case c;
  c.id = "mfrg.runner_test.f32";
  c.op = "moe_finalize_routing_v2_grad";
  // Dropless, every expandedX row addressed, so every gradExpandedXOut element is defined.
  c.params = cases::moe_finalize_routing_v2_grad::Builder().dtype(DType::kF32).rows(4).top_k(2).hidden(8).scales().experts(2).json();
  c.fill = FillMode::kExact;
  return c;
}

Verdict verdict_of(Misbehave m, RunOptions opt = {}, Case c = valid_case()) {
  TestBackend b(m);
  opt.isolate = false;
  return run_case(c, b, opt).verdict;
}

TEST(Runner, faithful_backend_passes) { EXPECT_EQ(verdict_of(Misbehave::kNone), Verdict::kPassed); }

TEST(Runner, writes_outside_the_output_fail) {
  EXPECT_EQ(verdict_of(Misbehave::kWriteBeforeBuffer), Verdict::kFailed);
  EXPECT_EQ(verdict_of(Misbehave::kWriteAfterBuffer), Verdict::kFailed);
}

TEST(Runner, defined_element_left_as_poison_fails) {
  TestBackend b(Misbehave::kLeavePoison);
  RunOptions opt;
  opt.isolate = false;
  const CaseResult r = run_case(valid_case(), b, opt);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_NE(r.reason.find("poison"), std::string::npos) << r.reason;
}

TEST(Runner, nondeterminism_is_caught_only_with_repeat) {
  EXPECT_EQ(verdict_of(Misbehave::kFlipOnSecondRun), Verdict::kPassed);
  RunOptions opt;
  opt.repeat = 3;
  EXPECT_EQ(verdict_of(Misbehave::kFlipOnSecondRun, opt), Verdict::kFailed);
  EXPECT_EQ(verdict_of(Misbehave::kNone, opt), Verdict::kPassed);
}

TEST(Runner, repeat_2_runs_the_device_exactly_twice_and_compares_the_second_run) {
  // The smallest repeat count: one more device run than without --repeat, and a difference that
  // only the second run shows fails the case.
  RunOptions opt;
  opt.isolate = false;
  for (int repeat : {1, 2}) {
    TestBackend b(Misbehave::kNone);
    opt.repeat = repeat;
    EXPECT_EQ(run_case(valid_case(), b, opt).verdict, Verdict::kPassed);
    EXPECT_EQ(b.runs(), repeat);
  }
  TestBackend flips(Misbehave::kFlipOnSecondRun);
  opt.repeat = 2;
  const CaseResult r = run_case(valid_case(), flips, opt);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_NE(r.reason.find("differs between run 1 and run 2"), std::string::npos) << r.reason;
}

Case empty_call() {
  Case c = valid_case();
  c.id = "mfrg.runner_test_empty.f32";
  // R = 0: gradY, expandedX and both outputs have no rows, a valid call (spec 3.2: nothing is launched).
  c.params = cases::moe_finalize_routing_v2_grad::Builder().dtype(DType::kF32).rows(0).top_k(2).hidden(8).scales().experts(2).json();
  return c;
}

TEST(Runner, an_empty_valid_call_passes_with_a_note_and_keeps_its_guard_and_input_checks) {
  RunOptions opt;
  opt.isolate = false;
  TestBackend b(Misbehave::kNone);
  const CaseResult r = run_case(empty_call(), b, opt);
  EXPECT_EQ(r.verdict, Verdict::kPassed) << r.reason;
  EXPECT_NE(r.reason.find("empty call: every output has 0 elements"), std::string::npos) << r.reason;
  // What can go wrong in an empty call is still seen: a write past the zero-size buffer.
  EXPECT_EQ(verdict_of(Misbehave::kWriteAfterBuffer, opt, empty_call()), Verdict::kFailed);
  EXPECT_EQ(verdict_of(Misbehave::kWriteBeforeBuffer, opt, empty_call()), Verdict::kFailed);
  EXPECT_EQ(verdict_of(Misbehave::kFail, opt, empty_call()), Verdict::kBackendError);
  // A call with elements keeps its plain reason.
  EXPECT_EQ(run_case(valid_case(), b, opt).reason, "all outputs match");
}

// gradY is 4 rows x 8 f32 = 128 bytes: one digest chunk, so the first change lies within all of it.
TEST(Runner, modified_input_fails_naming_the_input) {
  for (Misbehave m : {Misbehave::kModifyInput, Misbehave::kFlipLastInputBit}) {
    TestBackend b(m);
    RunOptions opt;
    opt.isolate = false;
    const CaseResult r = run_case(valid_case(), b, opt);
    EXPECT_EQ(r.verdict, Verdict::kFailed);
    EXPECT_EQ(r.reason, "the device modified input 'gradY' (first change within bytes [0, 128) of 128)");
  }
}

TEST(Runner, backend_error_is_reported) { EXPECT_EQ(verdict_of(Misbehave::kFail), Verdict::kBackendError); }

TEST(Runner, expected_reject_and_contract_mismatches) {
  Case c = valid_case();
  c.tensors = {{"gradY", {{"dtype", "int32"}}}};
  c.expect = 161002;
  EXPECT_EQ(verdict_of(Misbehave::kNone, {}, c), Verdict::kExpectedReject);
  // The device returns another code than the reference: contract mismatch.
  EXPECT_EQ(verdict_of(Misbehave::kWrongRejectCode, {}, c), Verdict::kFailed);
  // The case expects a different code than the documented one.
  c.expect = 561103;
  EXPECT_EQ(verdict_of(Misbehave::kNone, {}, c), Verdict::kFailed);
  // A valid call that the case says must be rejected.
  Case ok = valid_case();
  ok.expect = 161002;
  EXPECT_EQ(verdict_of(Misbehave::kNone, {}, ok), Verdict::kFailed);
  // An invalid call in a case that expects ok: the case file is wrong.
  c.expect = 0;
  EXPECT_EQ(verdict_of(Misbehave::kNone, {}, c), Verdict::kInvalidCase);
}

TEST(Runner, rejection_probe_unsupported_is_skipped_and_failure_is_backend_error) {
  Case c = valid_case();
  c.tensors = {{"gradY", {{"dtype", "int32"}}}};
  c.expect = 161002;
  EXPECT_EQ(verdict_of(Misbehave::kCannotProbeRejection, {}, c), Verdict::kSkipped);
  EXPECT_EQ(verdict_of(Misbehave::kRejectionProbeFails, {}, c), Verdict::kBackendError);
}

TEST(Runner, unknown_params_make_an_invalid_case) {
  Case c = valid_case();
  c.params["hiddenSize"] = 3;
  TestBackend b(Misbehave::kNone);
  RunOptions opt;
  opt.isolate = false;
  const CaseResult r = run_case(c, b, opt);
  EXPECT_EQ(r.verdict, Verdict::kInvalidCase);
  EXPECT_NE(r.reason.find("hiddenSize"), std::string::npos) << r.reason;
}

TEST(RunnerIsolation, abort_becomes_crashed) {
  TestBackend b(Misbehave::kAbort);
  RunOptions opt;
  opt.timeout_s = 30;
  const CaseResult r = run_case_isolated(valid_case(), b, opt);
  EXPECT_EQ(r.verdict, Verdict::kCrashed);
  EXPECT_NE(r.reason.find("signal"), std::string::npos) << r.reason;
}

TEST(RunnerIsolation, hang_becomes_timeout) {
  TestBackend b(Misbehave::kHang);
  RunOptions opt;
  opt.timeout_s = 0.3;
  const CaseResult r = run_case_isolated(valid_case(), b, opt);
  EXPECT_EQ(r.verdict, Verdict::kTimeout);
}

TEST(RunnerIsolation, isolated_result_matches_in_process_result) {
  TestBackend b(Misbehave::kNone);
  RunOptions opt;
  const CaseResult r = run_case_isolated(valid_case(), b, opt);
  EXPECT_EQ(r.verdict, Verdict::kPassed) << r.reason;
  EXPECT_EQ(r.outputs.size(), 2u);
}

// The stages lie one after the other inside ms.total, so their sum cannot exceed it; 1 us of slack
// for the rounding of the separate clock readings.
constexpr double kClockSlackMs = 1e-3;

double sum_inside_total(const StageTimes& t) {
  double sum = 0;
  for (const StageField& f : stage_fields()) {
    if (std::string(f.name) != "transfer") sum += t.*f.ms;
  }
  return sum;
}

TEST(RunnerStages, every_stage_is_recorded_non_negative_and_within_the_total) {
  TestBackend b(Misbehave::kNone);
  RunOptions opt;
  opt.isolate = false;
  opt.repeat = 2;  // reaches the determinism stage
  const CaseResult r = run_case(valid_case(), b, opt);
  ASSERT_EQ(r.verdict, Verdict::kPassed) << r.reason;
  const nlohmann::json stages = to_json(r).at("stages_ms");
  for (const char* key : {"parse", "validate", "fill", "reference", "pack", "golden", "plan", "device", "guards",
                          "unpack", "compare", "twin", "vacuity", "determinism", "transfer"}) {
    ASSERT_TRUE(stages.contains(key)) << key;
    EXPECT_GE(stages.at(key).get<double>(), 0) << key;
  }
  EXPECT_EQ(stages.size(), 15u);
  // Stages this passing case ran take time; against the reference there is no golden stage, and in
  // this process no transfer.
  for (double StageTimes::*ran : {&StageTimes::fill, &StageTimes::reference, &StageTimes::pack, &StageTimes::plan,
                                  &StageTimes::device, &StageTimes::guards, &StageTimes::unpack, &StageTimes::compare,
                                  &StageTimes::vacuity, &StageTimes::determinism}) {
    EXPECT_GT(r.stages_ms.*ran, 0);
  }
  EXPECT_EQ(r.stages_ms.golden, 0);
  EXPECT_EQ(r.stages_ms.transfer, 0);
  EXPECT_LE(sum_inside_total(r.stages_ms), r.total_ms + kClockSlackMs);
  // The older fields are the same clock readings: fill; reference and pack; the first device run.
  EXPECT_EQ(r.fill_ms, r.stages_ms.fill);
  EXPECT_EQ(r.reference_ms, r.stages_ms.reference + r.stages_ms.pack);
  EXPECT_EQ(r.device_ms, r.stages_ms.device);
}

TEST(RunnerStages, an_isolated_case_carries_the_child_stages_and_its_transfer) {
  TestBackend b(Misbehave::kNone);
  const CaseResult r = run_case_isolated(valid_case(), b, RunOptions{});
  ASSERT_EQ(r.verdict, Verdict::kPassed) << r.reason;
  EXPECT_GT(r.stages_ms.device, 0);  // measured in the child, carried through the pipe
  EXPECT_GT(r.stages_ms.transfer, 0);
  EXPECT_LE(sum_inside_total(r.stages_ms), r.total_ms + kClockSlackMs);
}

TEST(RunnerStages, a_case_ended_early_times_only_the_stages_it_reached) {
  Case c = valid_case();
  c.params["hiddenSize"] = 3;  // parse fails
  TestBackend b(Misbehave::kFail);
  RunOptions opt;
  opt.isolate = false;
  const CaseResult r = run_case(c, b, opt);
  ASSERT_EQ(r.verdict, Verdict::kInvalidCase);
  EXPECT_EQ(r.stages_ms.fill, 0);
  EXPECT_EQ(r.stages_ms.device, 0);
  EXPECT_LE(sum_inside_total(r.stages_ms), r.total_ms + kClockSlackMs);
}

TEST(RunnerVacuity, identical_rows_are_trusted_through_the_element_perturbation) {
  // H = 1 and exact fill with gradY of one value per row can make every compared row identical.
  // No row permutation can change such an output, and one element moved off its value is seen, so
  // the case passes (issue 12: MISTRUSTED only when no perturbation of a defined element is seen).
  Case c = valid_case();
  c.params = cases::moe_finalize_routing_v2_grad::Builder().dtype(DType::kF32).rows(2).hidden(1).experts(1).json();
  c.fill = FillMode::kExact;
  TestBackend b(Misbehave::kNone);
  RunOptions opt;
  opt.isolate = false;
  int identical_seeds = 0;
  for (uint64_t seed = 1; seed < 40; ++seed) {
    c.seed = seed;
    const CaseResult r = run_case(c, b, opt);
    // With H = 1 and K = 1, gradExpandedXOut is gradY permuted: rows identical iff both gradY values are.
    auto problem = make_problem(c);
    const TensorMap in = (*problem)->fill(c.fill, c.seed).value();
    identical_seeds += in.at("gradY").get(0) == in.at("gradY").get(1);
    EXPECT_EQ(r.verdict, Verdict::kPassed) << "seed " << seed << ": " << r.reason;
  }
  EXPECT_GT(identical_seeds, 0);  // the uniform output was among the cases run
}

}  // namespace
}  // namespace opgate

namespace opgate {
namespace {

TEST(RunnerBeyondRange, a_realistic_fill_without_overrides_may_not_leave_elements_beyond_the_range) {
  std::vector<OutputResult> outputs(2);
  outputs[0].compare.name = "x";
  outputs[1].compare.name = "y";
  outputs[1].compare.metrics.beyond_range = 3;
  Case c;
  c.fill = FillMode::kRealistic;
  const auto why = beyond_range_on_a_realistic_fill(c, outputs);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("y: the reference declares 3 element(s) beyond the kernel's range"), std::string::npos) << *why;
  // A value override (an extreme fill) or an adversarial fill may reach the range's edges.
  c.tensors = nlohmann::json{{"x", {{"fill", {{"extreme", "near_max"}}}}}};
  EXPECT_FALSE(beyond_range_on_a_realistic_fill(c, outputs).has_value());
  c.tensors = nlohmann::json::object();
  c.fill = FillMode::kAdversarial;
  EXPECT_FALSE(beyond_range_on_a_realistic_fill(c, outputs).has_value());
  // Nothing beyond the range: trusted.
  c.fill = FillMode::kRealistic;
  outputs[1].compare.metrics.beyond_range = 0;
  EXPECT_FALSE(beyond_range_on_a_realistic_fill(c, outputs).has_value());
}

}  // namespace
}  // namespace opgate
