// The per-case pipeline and its isolation in a child process.
#include "harness/runner.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <variant>

#include <fmt/format.h>

#include "core/child_process.h"
#include "core/json_read.h"
#include "core/parallel.h"
#include "harness/dump.h"
#include "harness/stages.h"

namespace opgate {
namespace {

using Clock = std::chrono::steady_clock;
using stages::Outcome;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// What every result of the case carries, whatever its verdict.
CaseResult result_header(const PreparedCase& pc, const std::string& backend, const RunOptions& opt) {
  CaseResult r;
  r.id = pc.c.id;
  r.op = pc.c.op;
  r.tier = pc.c.tier;
  r.backend = backend;
  r.case_json = case_to_json(pc.c);
  r.repeats = opt.repeat;
  r.repro = pc.repro;
  return r;
}

CaseResult finish(CaseResult r, Outcome outcome, Clock::time_point t0) {
  r.verdict = outcome.verdict;
  r.reason = std::move(outcome.reason);
  r.total_ms = ms_since(t0);
  return r;
}

// Runs one stage and adds its wall time to `into`.
template <class Stage>
auto timed(double& into, Stage&& stage) {
  const auto t = Clock::now();
  auto out = stage();
  into += ms_since(t);
  return out;
}

// Every tensor one case allocates: the canonical inputs, the expected values and the packed input
// images of stages (3)-(5), the device run and its unpacked outputs. Owned by the caller of
// run_stages, so a result can leave before they are freed (run_case_isolated).
struct CaseData {
  TensorMap inputs;
  RefOutputs ref;
  TensorMap packed;
  ComparePlan plan;  // kept for a tensor dump's allowances
  stages::DeviceRun device;
  TensorMap got;
};

// (3) fill, (4) reference, (5) pack and, against golden, the golden expected values; timed into r.
std::optional<Outcome> compute_case_data(const PreparedCase& pc, const Problem& problem, CaseData& data,
                                         CaseResult& r) {
  StageTimes& ms = r.stages_ms;
  auto filled = timed(ms.fill, [&] { return stages::fill(problem, pc.c); });
  if (auto* outcome = std::get_if<Outcome>(&filled)) return *outcome;
  r.fill_ms = ms.fill;
  data.inputs = std::move(std::get<TensorMap>(filled));
  // A format 2 golden stores everything the comparison needs: no reference at all.
  const bool stored = pc.golden && pc.golden->stores_tolerances();
  if (!stored) data.ref = timed(ms.reference, [&] { return stages::reference(problem, data.inputs); });
  data.packed = timed(ms.pack, [&] { return stages::pack(problem, data.inputs); });
  if (pc.golden) {
    auto expected = timed(ms.golden, [&] {
      return stored ? stages::golden_stored(*pc.golden, data.packed)
                    : stages::golden_expected(std::move(data.ref), *pc.golden, data.packed);
    });
    if (auto* outcome = std::get_if<Outcome>(&expected)) return *outcome;
    data.ref = std::move(std::get<RefOutputs>(expected));
  }
  r.reference_ms = ms.reference + ms.pack + ms.golden;
  return std::nullopt;
}

// Why a case passed. An empty valid call (every output has zero elements) says so: what it checked
// is the return code, the guard bytes around the empty buffers and the inputs.
std::string passed_reason(const std::vector<OutputResult>& outputs, int repeat) {
  const bool empty_call = !outputs.empty() && std::all_of(outputs.begin(), outputs.end(), [](const OutputResult& o) {
    return o.compare.metrics.elements == 0;
  });
  std::string why = repeat > 1 ? fmt::format("all outputs match; bit-identical over {} runs", repeat) : "all outputs match";
  if (empty_call) why += "; empty call: every output has 0 elements (return code, guard bytes and inputs checked)";
  for (const OutputResult& o : outputs) {
    const CompareMetrics& m = o.compare.metrics;
    if (m.elements > 0 && m.compared == 0) why += fmt::format("; {}: no element is defined here", o.compare.name);
    if (m.beyond_range > 0) {
      why += fmt::format("; {}: {} element(s) beyond the kernel's range not compared", o.compare.name, m.beyond_range);
    }
  }
  return why;
}

// (6) device through (11) determinism; the case's verdict.
Outcome check_device(const Problem& problem, Backend& backend, CaseData& data, FillMode fill, const RunOptions& opt,
                     const std::optional<TwinFiles>& pc_twin,
                     CaseResult& r) {
  StageTimes& ms = r.stages_ms;
  data.plan = timed(ms.plan, [&] { return stages::plan(problem, data.ref, fill, opt.gate); });
  const ComparePlan& plan = data.plan;
  const auto digests = timed(ms.guards, [&] { return stages::input_digests(data.packed); });
  auto run = timed(ms.device, [&] { return stages::device(problem, backend, data.packed); });
  r.device_ms = ms.device;
  if (auto* outcome = std::get_if<Outcome>(&run)) return *outcome;
  data.device = std::move(std::get<stages::DeviceRun>(run));
  r.warnings = data.device.warnings;
  if (auto outcome = timed(ms.guards, [&] { return stages::guards_and_inputs(data.device, data.packed, digests); })) {
    return *outcome;
  }
  data.got = timed(ms.unpack, [&] { return stages::unpack(problem, data.device); });
  stages::Compared compared =
      timed(ms.compare, [&] { return stages::compare(problem, plan, data.ref, data.got, data.inputs); });
  r.outputs = std::move(compared.outputs);
  // Failing outputs too: whether the twin errs as much is what a reader asks first.
  const TwinFiles* third_party = pc_twin ? &*pc_twin : nullptr;  // set by run --twin
  if (auto outcome = timed(ms.twin, [&] {
        return stages::twin(problem, backend, plan, data.ref, data.packed, data.got, third_party, r.outputs);
      })) {
    return *outcome;
  }
  if (compared.outcome) return *compared.outcome;
  const auto vacuous = timed(ms.vacuity, [&] {
    return opt.vacuity ? stages::vacuity(plan, data.ref, data.got, r.outputs) : std::nullopt;
  });
  if (auto outcome = timed(ms.determinism, [&] {
        return stages::determinism(problem, backend, data.packed, plan, data.ref, data.got, opt.repeat);
      })) {
    return *outcome;
  }
  r.determinism_checked = opt.repeat > 1;
  if (vacuous) return {Verdict::kMistrusted, "vacuous comparison: " + *vacuous};
  return {Verdict::kPassed, passed_reason(r.outputs, opt.repeat)};
}

// Every stage of one case, its tensors left in `data`.
CaseResult run_stages(const PreparedCase& pc, Backend& backend, const RunOptions& opt, CaseData& data) {
  const auto t0 = Clock::now();
  CaseResult r = result_header(pc, backend.name(), opt);
  auto parsed = timed(r.stages_ms.parse, [&] { return stages::parse(pc); });
  if (auto* outcome = std::get_if<Outcome>(&parsed)) return finish(std::move(r), *outcome, t0);
  const Problem& problem = *std::get<const Problem*>(parsed);
  if (auto outcome = timed(r.stages_ms.validate, [&] { return stages::validate(pc, problem, backend); })) {
    return finish(std::move(r), *outcome, t0);
  }
  if (auto outcome = compute_case_data(pc, problem, data, r)) return finish(std::move(r), *outcome, t0);
  Outcome outcome = check_device(problem, backend, data, plan_fill(pc.c), opt, pc.twin, r);
  if (outcome.verdict == Verdict::kPassed) {
    if (auto why = beyond_range_on_a_realistic_fill(pc.c, r.outputs)) outcome = Outcome{Verdict::kMistrusted, *why};
  }
  return finish(std::move(r), std::move(outcome), t0);
}

// The tensor dump the options ask for, if any: repro's folder, or <dir>/<id> for a failing case.
Status dump_if_asked(const CaseResult& r, const CaseData& data, const RunOptions& opt) {
  if (opt.dump_dir.empty()) return Status::ok();
  if (opt.dump_failed_only && !verdict_fails(r.verdict, false)) return Status::ok();
  const std::string dir = opt.dump_failed_only ? opt.dump_dir + "/" + r.id : opt.dump_dir;
  return dump_case_tensors(dir, r, CaseTensors{&data.inputs, &data.ref, &data.plan, &data.got});
}

// run_stages, then the dump; a failed dump is the caller's (`dumped`) or a warning of the result.
CaseResult run_and_dump(const PreparedCase& pc, Backend& backend, const RunOptions& opt, CaseData& data,
                        Status* dumped) {
  CaseResult r = run_stages(pc, backend, opt, data);
  Status st = dump_if_asked(r, data, opt);
  if (dumped != nullptr) *dumped = st;
  else if (!st.is_ok()) r.warnings.push_back("tensor dump: " + st.message());
  return r;
}

}  // namespace

CaseResult run_case(const PreparedCase& pc, Backend& backend, const RunOptions& opt, Status* dumped) {
  CaseData data;
  return run_and_dump(pc, backend, opt, data, dumped);
}

CaseResult run_case(const Case& c, Backend& backend, const RunOptions& opt) {
  return run_case(prepare_case(c, backend.name(), opt), backend, opt);
}

CaseResult run_case_isolated(const PreparedCase& pc, Backend& backend, const RunOptions& opt) {
  const auto t0 = Clock::now();
  const CaseResult base = result_header(pc, backend.name(), opt);
  const ChildOutcome child = run_in_child(
      [&]() -> std::string {
        if (opt.child_threads > 0) math::set_threads(opt.child_threads);
        // The result leaves while the case's tensors (gigabytes at nightly sizes) are still
        // allocated; the child then exits without freeing them one by one, and the parent goes on
        // while the kernel reclaims them (core/child_process.h). So a kernel that corrupted the
        // heap such that free() would abort at the end of the case no longer turns its verdict
        // into CRASHED: the guards (stage 7) are the check for writes outside the outputs, and a
        // run in one process (--no-isolate) still frees everything.
        CaseData data;
        const CaseResult r = run_and_dump(pc, backend, opt, data, nullptr);
        send_result_and_exit(to_json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      },
      opt.timeout_s);
  switch (child.end) {
    case ChildOutcome::End::kNotStarted: return finish(base, {Verdict::kBackendError, child.error}, t0);
    // The caller sees stop_signal() and records nothing for this case (resume runs it again).
    case ChildOutcome::End::kInterrupted:
      return finish(base, {Verdict::kBackendError, "interrupted by a stop signal; not recorded"}, t0);
    case ChildOutcome::End::kTimedOut:
      return finish(base, {Verdict::kTimeout, fmt::format("no result within --timeout {} s; child killed", opt.timeout_s)},
                    t0);
    case ChildOutcome::End::kSignaled:
      return finish(base,
                    {Verdict::kCrashed, fmt::format("child died of signal {} ({})", child.signal, strsignal(child.signal))},
                    t0);
    case ChildOutcome::End::kExited:
      if (child.exit_status != 0) {
        return finish(base, {Verdict::kCrashed, fmt::format("child exited with status {}", child.exit_status)}, t0);
      }
      break;
  }
  const std::string& text = child.output;
  auto j = parse_json_bounded(text, "child result");
  if (!j) return finish(base, {Verdict::kCrashed, "child result unreadable: " + j.status().message()}, t0);
  auto r = case_result_from_json(*j);
  if (!r) return finish(base, {Verdict::kCrashed, r.status().message()}, t0);
  r->case_json = base.case_json;
  r->stages_ms.transfer = std::max(0.0, ms_since(t0) - r->total_ms);
  return *r;
}

CaseResult run_case_isolated(const Case& c, Backend& backend, const RunOptions& opt) {
  return run_case_isolated(prepare_case(c, backend.name(), opt), backend, opt);
}

std::optional<std::string> beyond_range_on_a_realistic_fill(const Case& c, const std::vector<OutputResult>& outputs) {
  if (c.fill != FillMode::kRealistic) return std::nullopt;
  if (c.tensors.is_object()) {
    for (auto it = c.tensors.begin(); it != c.tensors.end(); ++it) {
      if (it.value().is_object() && it.value().contains("fill")) return std::nullopt;
    }
  }
  for (const OutputResult& o : outputs) {
    if (o.compare.metrics.beyond_range > 0) {
      return fmt::format("{}: the reference declares {} element(s) beyond the kernel's range on a realistic fill "
                         "without value overrides",
                         o.compare.name, o.compare.metrics.beyond_range);
    }
  }
  return std::nullopt;
}

}  // namespace opgate
