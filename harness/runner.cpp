// The per-case pipeline and its isolation in a child process.
#include "harness/runner.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "core/child_process.h"
#include "core/fill_override.h"
#include "harness/golden.h"
#include "core/guard.h"
#include "core/json_read.h"
#include "cases/registry.h"

namespace opgate {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string shell_quote(const std::string& s) {
  if (s.find_first_of(" '\"$`\\|&;<>(){}*?!#~") == std::string::npos && !s.empty()) return s;
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

CaseResult finish(CaseResult r, Verdict v, std::string reason, Clock::time_point t0) {
  r.verdict = v;
  r.reason = std::move(reason);
  r.total_ms = ms_since(t0);
  return r;
}

// Runs the device once on fresh poisoned, guarded buffers; returns the images or why it failed.
struct DeviceRun {
  std::map<std::string, GuardedBuffer> buffers;
  TensorMap images;
  std::vector<std::string> warnings;  // the backend's findings that do not fail the case
};
Expected<DeviceRun> run_device(const Problem& problem, Backend& backend, const TensorMap& packed) {
  DeviceRun run;
  for (const auto& [name, spec] : problem.output_images()) {
    run.buffers[name] = make_guarded(spec.dtype, spec.shape);
    run.images[name] = run.buffers[name].tensor;
  }
  Status st = backend.run(problem, packed, run.images);
  if (!st.is_ok()) return st;
  run.warnings = backend.take_warnings();
  return run;
}

// First cared element whose bits differ between two runs, as text; "" if identical.
std::string first_difference(const Tensor& a, const Tensor& b, const Tensor& care) {
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (care.defined() && care.get(i) == 0) continue;
    if (a.bits(i) != b.bits(i)) {
      return fmt::format("index {}: {:.9g} vs {:.9g}", shape_to_string(a.unravel(i)), a.get(i), b.get(i));
    }
  }
  return "";
}

// "<name> (<why>)" for the first tensor where golden and recomputed values differ; "" if none.
std::string first_disagreement(const TensorMap& golden, const TensorMap& fresh) {
  std::set<std::string> names;
  for (const auto& kv : golden) names.insert(kv.first);
  for (const auto& kv : fresh) names.insert(kv.first);
  for (const auto& name : names) {
    const auto g = golden.find(name), f = fresh.find(name);
    const std::string why =
        golden_values_differ(g == golden.end() ? Tensor() : g->second, f == fresh.end() ? Tensor() : f->second);
    if (!why.empty()) return fmt::format("{} ({})", name, why);
  }
  return "";
}

}  // namespace

std::string repro_command(const Case& c, const std::string& backend, const RunOptions& opt) {
  std::string source = c.source.empty() ? fmt::format("<report>/failed/{}.json", c.id) : c.source;
  std::string cmd = fmt::format("{} repro {} --id {} --backend {}", opt.repro_prefix, shell_quote(source),
                                shell_quote(c.id), shell_quote(backend));
  if (opt.against_golden) cmd += " --against golden";
  if (opt.repeat > 1) cmd += fmt::format(" --repeat {}", opt.repeat);
  return cmd;
}

CaseResult run_case(const Case& c, Backend& backend, const RunOptions& opt) {
  const auto t0 = Clock::now();
  CaseResult r;
  r.id = c.id;
  r.op = c.op;
  r.tier = c.tier;
  r.backend = backend.name();
  r.case_json = case_to_json(c);
  r.repeats = opt.repeat;
  r.repro = repro_command(c, backend.name(), opt);

  auto made = make_problem(c);
  if (!made) return finish(r, Verdict::kInvalidCase, made.status().message(), t0);
  const Problem& problem = **made;

  // (2) validation against the case's expectation.
  const Status valid = problem.validate();
  if (c.expect != 0) {
    if (valid.is_ok()) {
      return finish(r, Verdict::kFailed,
                    fmt::format("contract mismatch: the case expects aclnn code {}, the reference accepts the call",
                                c.expect),
                    t0);
    }
    if (valid.aclnn_code() != c.expect) {
      return finish(r, Verdict::kFailed,
                    fmt::format("contract mismatch: the case expects aclnn code {}, the reference returns {} ({})",
                                c.expect, valid.aclnn_code(), valid.message()),
                    t0);
    }
    auto device_code = backend.rejection_code(problem);
    if (!device_code) {
      // A backend that cannot ask the device about this call (an entry point without the probe)
      // has no verdict to give; anything else is a backend failure.
      const bool unsupported = device_code.status().code() == StatusCode::kUnsupported;
      return finish(r, unsupported ? Verdict::kSkipped : Verdict::kBackendError, device_code.status().message(), t0);
    }
    if (*device_code != c.expect) {
      return finish(r, Verdict::kFailed,
                    fmt::format("contract mismatch: the reference returns {}, the device returns {}", c.expect,
                                *device_code),
                    t0);
    }
    return finish(r, Verdict::kExpectedReject, valid.message(), t0);
  }
  if (!valid.is_ok()) {
    return finish(r, Verdict::kInvalidCase,
                  fmt::format("the case expects ok but the call is invalid: {}", valid.message()), t0);
  }
  // (3) backend support.
  const Support support = backend.supports(problem);
  if (!support.yes) return finish(r, Verdict::kSkipped, support.reason, t0);

  // Against golden, the folder must have been made from this very case. Otherwise a changed case
  // shows up later as a disagreeing reference (blaming it) or passes against stale expected values.
  std::optional<GoldenCase> golden;
  if (opt.against_golden) {
    auto read = read_golden(golden_case_dir(opt.golden_root, c.op, c.id));
    if (!read) return finish(r, Verdict::kInvalidCase, read.status().message(), t0);
    const auto diffs = case_differences(read->case_json, golden_case_json(c, problem));
    if (!diffs.empty()) {
      return finish(r, Verdict::kInvalidCase,
                    fmt::format("case changed since golden regen: {} (golden {}, now {}); run `opgate golden regen`",
                                diffs.front().field, diffs.front().before, diffs.front().after),
                    t0);
    }
    golden = std::move(*read);
  }

  // (4) fill and (5) reference or golden.
  auto t = Clock::now();
  auto filled = fill_case_inputs(problem, c);
  if (!filled) return finish(r, Verdict::kInvalidCase, filled.status().message(), t0);
  const TensorMap& inputs = *filled;
  Status data_ok = problem.check_data(inputs);
  if (!data_ok.is_ok()) return finish(r, Verdict::kInvalidCase, data_ok.message(), t0);
  r.fill_ms = ms_since(t);
  t = Clock::now();
  RefOutputs ref = problem.reference(inputs);
  TensorMap packed = problem.pack(inputs);
  if (golden) {
    // read_golden has checked every digest, so corrupted files never reach the comparison.
    for (const auto& [name, tensor] : packed) {
      auto stored = golden->inputs.find(name);
      if (stored == golden->inputs.end() || !stored->second.bytes_equal(tensor)) {
        return finish(r, Verdict::kInvalidCase,
                      fmt::format("golden input '{}' differs from the regenerated one: the input generator "
                                  "changed since golden regen; run `opgate golden regen`",
                                  name),
                      t0);
      }
    }
    if (golden->inputs.size() != packed.size()) {
      return finish(r, Verdict::kInvalidCase,
                    "the golden files hold inputs the case no longer has; run `opgate golden regen`", t0);
    }
    // The reference is recomputed even here: the `bound` tolerance needs per-element magnitudes,
    // which golden files do not store. So the golden values become the expected values and a
    // cross-check: a reference that disagrees with them (changed since regen, or computing
    // differently on this machine) makes every comparison of this case untrustworthy.
    std::string disagree = first_disagreement(golden->expected, ref.expected);
    if (const std::string care = first_disagreement(golden->care, ref.care); disagree.empty() && !care.empty()) {
      disagree = "care mask of " + care;
    }
    if (!disagree.empty()) return finish(r, Verdict::kFailed, "golden and reference disagree: " + disagree, t0);
    ref.expected = golden->expected;
    ref.care = golden->care;
  }
  r.reference_ms = ms_since(t);
  const ComparePlan plan = problem.compare_plan(ref, c.fill);

  // (6)-(8) device run on poisoned, guarded buffers; inputs must come back untouched.
  TensorMap pristine;
  for (const auto& [name, tensor] : packed) pristine[name] = tensor.clone();
  t = Clock::now();
  auto run = run_device(problem, backend, packed);
  r.device_ms = ms_since(t);
  if (!run) return finish(r, Verdict::kBackendError, run.status().message(), t0);
  r.warnings = run->warnings;
  for (const auto& [name, buffer] : run->buffers) {
    const std::string broken = check_guards(buffer);
    if (!broken.empty()) {
      return finish(r, Verdict::kFailed, fmt::format("write outside output '{}': {}", name, broken), t0);
    }
  }
  for (const auto& [name, tensor] : packed) {
    if (!tensor.bytes_equal(pristine[name]) && run->images.count(name) == 0) {
      return finish(r, Verdict::kFailed, fmt::format("the device modified input '{}'", name), t0);
    }
  }

  // (9)-(10) unpack and compare per the plan.
  const TensorMap got = problem.unpack(run->images);
  auto tensor_or_empty = [](const TensorMap& m, const std::string& n) {
    auto it = m.find(n);
    return it == m.end() ? Tensor() : it->second;
  };
  std::vector<std::string> failed_outputs;
  std::string vacuous;
  for (const OutputCheck& check : plan.outputs) {
    const Tensor exp = tensor_or_empty(ref.expected, check.name);
    const Tensor dev = tensor_or_empty(got, check.name);
    if (!dev.defined() || (!exp.defined() && check.kind != CheckKind::kUndefined)) {
      return finish(r, Verdict::kBackendError, fmt::format("output '{}' missing", check.name), t0);
    }
    const Tensor mag = tensor_or_empty(ref.magnitude, check.name);
    const Tensor care = tensor_or_empty(ref.care, check.name);
    CompareResult cr = compare_output(check, exp, dev, mag, care, poison_bits(check.device_dtype));
    for (auto* points : {&cr.first_failures, &cr.worst}) {
      for (auto& p : *points) p.where = problem.describe(check.name, p.index, inputs);
    }
    if (!cr.passed) {
      failed_outputs.push_back(fmt::format("{}: {}", check.name, cr.message));
    } else if (opt.vacuity && vacuous.empty()) {
      if (auto why = vacuity_check(check, exp, dev, mag, care, &cr)) vacuous = *why;
    }
    r.outputs.push_back(OutputResult{check, std::move(cr)});
  }
  if (!failed_outputs.empty()) {
    std::string reason;
    for (const auto& f : failed_outputs) reason += (reason.empty() ? "" : "; ") + f;
    return finish(r, Verdict::kFailed, reason, t0);
  }

  // (11) determinism: the same inputs must give bit-identical defined outputs.
  for (int k = 2; k <= opt.repeat; ++k) {
    auto again = run_device(problem, backend, packed);
    if (!again) return finish(r, Verdict::kBackendError, again.status().message(), t0);
    const TensorMap got_again = problem.unpack(again->images);
    for (const OutputCheck& check : plan.outputs) {
      if (check.kind == CheckKind::kUndefined) continue;
      const std::string diff = first_difference(got.at(check.name), got_again.at(check.name),
                                                tensor_or_empty(ref.care, check.name));
      if (!diff.empty()) {
        return finish(r, Verdict::kFailed,
                      fmt::format("nondeterministic: output '{}' differs between run 1 and run {} at {}",
                                  check.name, k, diff),
                      t0);
      }
    }
  }
  r.determinism_checked = opt.repeat > 1;
  if (!vacuous.empty()) return finish(r, Verdict::kMistrusted, "vacuous comparison: " + vacuous, t0);
  return finish(r, Verdict::kPassed,
                opt.repeat > 1 ? fmt::format("all outputs match; bit-identical over {} runs", opt.repeat)
                               : "all outputs match",
                t0);
}

CaseResult run_case_isolated(const Case& c, Backend& backend, const RunOptions& opt) {
  const auto t0 = Clock::now();
  CaseResult base;
  base.id = c.id;
  base.op = c.op;
  base.tier = c.tier;
  base.backend = backend.name();
  base.case_json = case_to_json(c);
  base.repeats = opt.repeat;
  base.repro = repro_command(c, backend.name(), opt);

  const ChildOutcome child = run_in_child(
      [&] {
        return to_json(run_case(c, backend, opt)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      },
      opt.timeout_s);
  switch (child.end) {
    case ChildOutcome::End::kNotStarted: return finish(base, Verdict::kBackendError, child.error, t0);
    // The caller sees stop_signal() and records nothing for this case (resume runs it again).
    case ChildOutcome::End::kInterrupted:
      return finish(base, Verdict::kBackendError, "interrupted by a stop signal; not recorded", t0);
    case ChildOutcome::End::kTimedOut:
      return finish(base, Verdict::kTimeout,
                    fmt::format("no result within --timeout {} s; child killed", opt.timeout_s), t0);
    case ChildOutcome::End::kSignaled:
      return finish(base, Verdict::kCrashed,
                    fmt::format("child died of signal {} ({})", child.signal, strsignal(child.signal)), t0);
    case ChildOutcome::End::kExited:
      if (child.exit_status != 0) {
        return finish(base, Verdict::kCrashed, fmt::format("child exited with status {}", child.exit_status), t0);
      }
      break;
  }
  const std::string& text = child.output;
  auto j = parse_json_bounded(text, "child result");
  if (!j) return finish(base, Verdict::kCrashed, "child result unreadable: " + j.status().message(), t0);
  auto r = case_result_from_json(*j);
  if (!r) return finish(base, Verdict::kCrashed, r.status().message(), t0);
  r->case_json = base.case_json;
  return *r;
}

std::string describe_result(const CaseResult& r, int max_points) {
  std::string out;
  for (const auto& o : r.outputs) {
    const CompareResult& c = o.compare;
    if (c.passed) continue;
    out += fmt::format("  output {} ({}): {}\n", c.name, c.standard, c.message);
    int n = 0;
    for (const ComparePoint& p : c.worst) {
      if (n++ >= max_points) break;
      out += fmt::format("    {:<28} {:<40} expected {} (as dtype {}) got {} diff {} allowed {}{}\n",
                         nlohmann::json(p.index).dump(), p.where, number_text(p.expected),
                         number_text(p.expected_rounded), number_text(p.got), number_text(p.abs_err),
                         number_text(p.allowed), p.poison ? " [poison]" : "");
    }
  }
  return out;
}

}  // namespace opgate
