// The stages of one case, in the order the runner calls them.
#include "harness/stages.h"

#include <atomic>
#include <set>

#include <fmt/format.h>

#include "core/dual_benchmark.h"
#include "core/fill_override.h"
#include "harness/backends.h"

namespace opgate::stages {
namespace {

Tensor tensor_or_empty(const TensorMap& m, const std::string& name) {
  const auto it = m.find(name);
  return it == m.end() ? Tensor() : it->second;
}

// A call the case expects to be rejected: the reference and the device must both reject it with
// the documented code.
Outcome expected_rejection(const Case& c, const Status& valid, const Problem& problem, Backend& backend) {
  if (valid.is_ok()) {
    return {Verdict::kFailed,
            fmt::format("contract mismatch: the case expects aclnn code {}, the reference accepts the call", c.expect)};
  }
  if (valid.aclnn_code() != c.expect) {
    return {Verdict::kFailed,
            fmt::format("contract mismatch: the case expects aclnn code {}, the reference returns {} ({})", c.expect,
                        valid.aclnn_code(), valid.message())};
  }
  auto device_code = backend.rejection_code(problem);
  if (!device_code) {
    // A backend that cannot ask the device about this call (an entry point without the probe)
    // has no verdict to give; anything else is a backend failure.
    const bool unsupported = device_code.status().code() == StatusCode::kUnsupported;
    return {unsupported ? Verdict::kSkipped : Verdict::kBackendError, device_code.status().message()};
  }
  if (*device_code != c.expect) {
    return {Verdict::kFailed,
            fmt::format("contract mismatch: the reference returns {}, the device returns {}", c.expect, *device_code)};
  }
  return {Verdict::kExpectedReject, valid.message()};
}

// "<name> (<why>)" for the first tensor where golden and recomputed values differ; "" if none.
std::string first_disagreement(const TensorMap& golden, const TensorMap& fresh) {
  std::set<std::string> names;
  for (const auto& kv : golden) names.insert(kv.first);
  for (const auto& kv : fresh) names.insert(kv.first);
  for (const auto& name : names) {
    const std::string why = golden_values_differ(tensor_or_empty(golden, name), tensor_or_empty(fresh, name));
    if (!why.empty()) return fmt::format("{} ({})", name, why);
  }
  return "";
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

}  // namespace

Staged<const Problem*> parse(const PreparedCase& pc) {
  if (!pc.problem) return Outcome{Verdict::kInvalidCase, pc.problem_error.message()};
  return pc.problem.get();
}

std::optional<Outcome> validate(const PreparedCase& pc, const Problem& problem, Backend& backend) {
  const Case& c = pc.c;
  const Status valid = problem.validate();
  if (c.expect != 0) return expected_rejection(c, valid, problem, backend);
  if (!valid.is_ok()) {
    return Outcome{Verdict::kInvalidCase, fmt::format("the case expects ok but the call is invalid: {}", valid.message())};
  }
  const Support support = backend.supports(problem);
  if (!support.yes) return Outcome{Verdict::kSkipped, support.reason};
  if (!pc.golden_error.is_ok()) return Outcome{Verdict::kInvalidCase, pc.golden_error.message()};
  if (!pc.twin_error.is_ok()) return Outcome{Verdict::kInvalidCase, pc.twin_error.message()};
  // Against golden, the folder must have been made from this very case. Otherwise a changed case
  // shows up later as a disagreeing reference (blaming it) or passes against stale expected values.
  if (pc.golden) {
    const auto diffs = case_differences(pc.golden->case_json, golden_case_json(c, problem));
    if (!diffs.empty()) {
      return Outcome{Verdict::kInvalidCase,
                  fmt::format("case changed since golden regen: {} (golden {}, now {}); run `opgate golden regen`",
                              diffs.front().field, diffs.front().before, diffs.front().after)};
    }
  }
  return std::nullopt;
}

Staged<TensorMap> fill(const Problem& problem, const Case& c) {
  auto filled = fill_case_inputs(problem, c);
  if (!filled) return Outcome{Verdict::kInvalidCase, filled.status().message()};
  const Status data_ok = problem.check_data(*filled);
  if (!data_ok.is_ok()) return Outcome{Verdict::kInvalidCase, data_ok.message()};
  return std::move(*filled);
}

namespace {
std::atomic<int64_t> reference_call_count{0};

// The golden inputs must be the packed ones: otherwise the input generator changed since regen.
std::optional<Outcome> golden_inputs_differ(const GoldenCase& golden, const TensorMap& packed) {
  // read_golden has checked every digest, so corrupted files never reach the comparison.
  for (const auto& [name, tensor] : packed) {
    auto stored = golden.inputs.find(name);
    if (stored == golden.inputs.end() || !stored->second.bytes_equal(tensor)) {
      return Outcome{Verdict::kInvalidCase,
                  fmt::format("golden input '{}' differs from the regenerated one: the input generator "
                              "changed since golden regen; run `opgate golden regen`",
                              name)};
    }
  }
  if (golden.inputs.size() != packed.size()) {
    return Outcome{Verdict::kInvalidCase, "the golden files hold inputs the case no longer has; run `opgate golden regen`"};
  }
  return std::nullopt;
}
}  // namespace

RefOutputs reference(const Problem& problem, const TensorMap& inputs) {
  ++reference_call_count;
  return problem.reference(inputs);
}

int64_t reference_calls() { return reference_call_count.load(); }

TensorMap pack(const Problem& problem, const TensorMap& inputs) { return problem.pack(inputs); }

Staged<RefOutputs> golden_expected(RefOutputs ref, const GoldenCase& golden, const TensorMap& packed) {
  if (auto outcome = golden_inputs_differ(golden, packed)) return *outcome;
  // Format 1: the reference is recomputed for the `bound` magnitudes, which these files do not
  // store. So the golden values become the expected values and a
  // cross-check: a reference that disagrees with them (changed since regen, or computing
  // differently on this machine) makes every comparison of this case untrustworthy.
  std::string disagree = first_disagreement(golden.expected, ref.expected);
  if (const std::string care = first_disagreement(golden.care, ref.care); disagree.empty() && !care.empty()) {
    disagree = "care mask of " + care;
  }
  if (!disagree.empty()) return Outcome{Verdict::kFailed, "golden and reference disagree: " + disagree};
  ref.expected = golden.expected;
  ref.care = golden.care;
  return ref;
}

Staged<RefOutputs> golden_stored(const GoldenCase& golden, const TensorMap& packed) {
  if (auto outcome = golden_inputs_differ(golden, packed)) return *outcome;
  return RefOutputs{golden.expected, golden.magnitude, golden.care, golden.slack, {}};
}

ComparePlan plan(const Problem& problem, const RefOutputs& ref, FillMode fill, Standard gate) {
  ComparePlan p = problem.compare_plan(ref, fill);
  gate_with_standard(p, gate);
  return p;
}

Staged<DeviceRun> device(const Problem& problem, Backend& backend, const TensorMap& packed) {
  DeviceRun run;
  for (const auto& [name, spec] : problem.output_images()) {
    run.buffers[name] = make_guarded(spec.dtype, spec.shape);
    run.images[name] = run.buffers[name].tensor;
  }
  const Status st = backend.run(problem, packed, run.images);
  if (!st.is_ok()) return Outcome{Verdict::kBackendError, st.message()};
  run.warnings = backend.take_warnings();
  return run;
}

std::map<std::string, InputDigest> input_digests(const TensorMap& packed) {
  std::map<std::string, InputDigest> digests;
  for (const auto& [name, tensor] : packed) digests[name] = digest_input(tensor);
  return digests;
}

std::optional<Outcome> guards_and_inputs(const DeviceRun& run, const TensorMap& packed,
                                         const std::map<std::string, InputDigest>& before) {
  for (const auto& [name, buffer] : run.buffers) {
    const std::string broken = check_guards(buffer);
    if (!broken.empty()) return Outcome{Verdict::kFailed, fmt::format("write outside output '{}': {}", name, broken)};
  }
  for (const auto& [name, tensor] : packed) {
    if (run.images.count(name) != 0) continue;  // an output image too: the device writes it by design
    const std::string change = input_change(before.at(name), tensor);
    if (!change.empty()) return Outcome{Verdict::kFailed, fmt::format("the device modified input '{}' ({})", name, change)};
  }
  return std::nullopt;
}

TensorMap unpack(const Problem& problem, const DeviceRun& run) { return problem.unpack(run.images); }

Compared compare(const Problem& problem, const ComparePlan& plan, const RefOutputs& ref, const TensorMap& got,
                 const TensorMap& inputs) {
  Compared out;
  std::string failures;
  for (const OutputCheck& check : plan.outputs) {
    const Tensor exp = tensor_or_empty(ref.expected, check.name);
    const Tensor dev = tensor_or_empty(got, check.name);
    if (!dev.defined() || (!exp.defined() && check.kind != CheckKind::kUndefined)) {
      out.outcome = Outcome{Verdict::kBackendError, fmt::format("output '{}' missing", check.name)};
      return out;
    }
    CompareResult cr = compare_output(check, exp, dev, tensor_or_empty(ref.magnitude, check.name),
                                      tensor_or_empty(ref.care, check.name), poison_bits(check.device_dtype));
    for (auto* points : {&cr.first_failures, &cr.worst}) {
      for (auto& p : *points) p.where = problem.describe(check.name, p.index, inputs);
    }
    if (const auto beyond = ref.beyond_range.find(check.name); beyond != ref.beyond_range.end() && beyond->second.count > 0) {
      cr.metrics.beyond_range = beyond->second.count;
      cr.message += fmt::format("; {} element(s) not compared: {}", beyond->second.count, beyond->second.reason);
    }
    if (!cr.passed && !cr.metrics.axis_budget.empty()) cr.axis_name = problem.describe(check.name, {}, inputs);
    if (!cr.passed) failures += fmt::format("{}{}: {}", failures.empty() ? "" : "; ", check.name, cr.message);
    out.outputs.push_back(OutputResult{check, std::move(cr)});
  }
  if (!failures.empty()) out.outcome = Outcome{Verdict::kFailed, failures};
  return out;
}

std::optional<std::string> vacuity(const ComparePlan& plan, const RefOutputs& ref, const TensorMap& got,
                                   const std::vector<OutputResult>& outputs) {
  for (size_t i = 0; i < plan.outputs.size() && i < outputs.size(); ++i) {
    const OutputCheck& check = plan.outputs[i];
    if (auto why = vacuity_check(check, tensor_or_empty(ref.expected, check.name), tensor_or_empty(got, check.name),
                                 tensor_or_empty(ref.magnitude, check.name), tensor_or_empty(ref.care, check.name),
                                 &outputs[i].compare)) {
      return why;
    }
  }
  return std::nullopt;
}

std::optional<Outcome> twin(const Problem& problem, const Backend& device, const ComparePlan& plan,
                            const RefOutputs& ref, const TensorMap& packed, const TensorMap& got,
                            const TwinFiles* third_party, std::vector<OutputResult>& outputs) {
  auto not_applicable = [&](const std::string& why) {
    for (OutputResult& o : outputs) o.compare.standards.push_back({"dual-benchmark", {false, true, why}});
    return std::nullopt;
  };
  TensorMap twin_got;
  if (third_party != nullptr) {
    for (const OutputCheck& check : plan.outputs) {
      const std::string why = twin_shape_problem(*third_party, check.name, tensor_or_empty(ref.expected, check.name).shape());
      if (!why.empty()) return Outcome{Verdict::kInvalidCase, "third-party twin: " + why};
    }
    twin_got = third_party->outputs;
  } else {
    if (device.name() == "emu") return not_applicable("not applicable: the device is the emulator, the twin itself");
    auto emu = make_backend("emu");
    if (!emu) return not_applicable("not applicable: no twin (" + emu.status().message() + ")");
    auto run = stages::device(problem, **emu, packed);
    if (auto* outcome = std::get_if<Outcome>(&run)) return not_applicable("not applicable: the twin failed: " + outcome->reason);
    twin_got = unpack(problem, std::get<DeviceRun>(run));
  }
  for (size_t i = 0; i < plan.outputs.size() && i < outputs.size(); ++i) {
    const OutputCheck& check = plan.outputs[i];
    const std::string& n = check.name;
    if (third_party != nullptr && !twin_got.count(n)) {
      outputs[i].compare.standards.push_back(
          {"dual-benchmark", {false, true, fmt::format("not applicable: no third-party output {}/{}.npy", third_party->dir, n)}});
      continue;
    }
    outputs[i].compare.standards.push_back(
        {"dual-benchmark", dual_benchmark_output(check, outputs[i].compare, tensor_or_empty(ref.expected, n),
                                                 tensor_or_empty(got, n), tensor_or_empty(twin_got, n),
                                                 tensor_or_empty(ref.magnitude, n), tensor_or_empty(ref.care, n))});
  }
  return std::nullopt;
}

std::optional<Outcome> determinism(const Problem& problem, Backend& backend, const TensorMap& packed,
                                const ComparePlan& plan, const RefOutputs& ref, const TensorMap& got, int repeat) {
  for (int k = 2; k <= repeat; ++k) {
    auto again = device(problem, backend, packed);
    if (auto* outcome = std::get_if<Outcome>(&again)) return *outcome;
    const TensorMap got_again = unpack(problem, std::get<DeviceRun>(again));
    for (const OutputCheck& check : plan.outputs) {
      if (check.kind == CheckKind::kUndefined) continue;
      const std::string diff =
          first_difference(got.at(check.name), got_again.at(check.name), tensor_or_empty(ref.care, check.name));
      if (!diff.empty()) {
        return Outcome{Verdict::kFailed, fmt::format("nondeterministic: output '{}' differs between run 1 and run {} at {}",
                                                  check.name, k, diff)};
      }
    }
  }
  return std::nullopt;
}

}  // namespace opgate::stages
