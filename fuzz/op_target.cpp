// The operator fuzz harness (fuzz/op_target.h): one decoded case through every step of the
// pipeline, with the invariants of style-and-layout.md B11 checked in order; the device run and
// its comparison go through the runner's in-process path, exactly as `opgate repro` replays them.
#include "fuzz/op_target.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "harness/backends.h"
#include "cases/registry.h"
#include "harness/runner.h"
#include "reports/result_text.h"
#include "fuzz/fuzz_input.h"

namespace opgate::fuzz {
namespace {

Backend& fuzz_backend() {
  static const std::unique_ptr<Backend> backend = [] {
    const char* env = std::getenv("OPGATE_FUZZ_BACKEND");
    const std::string name = env != nullptr && *env != '\0' ? env : "emu";
    auto made = make_backend(name);
    if (!made) {
      std::fprintf(stderr, "opgate fuzz: OPGATE_FUZZ_BACKEND=%s: %s\n", name.c_str(), made.status().message().c_str());
      std::exit(2);
    }
    return std::move(*made);
  }();
  return *backend;
}

TensorMap clone_map(const TensorMap& m) {
  TensorMap out;
  for (const auto& [name, t] : m) out[name] = t.clone();
  return out;
}

// "" if both maps hold the same names with byte-identical tensors, else the first difference.
std::string map_difference(const TensorMap& a, const TensorMap& b) {
  for (const auto& [name, t] : a) {
    auto it = b.find(name);
    if (it == b.end()) return fmt::format("tensor '{}' only in the first", name);
    if (!t.bytes_equal(it->second)) return fmt::format("tensor '{}' differs", name);
  }
  for (const auto& [name, t] : b) {
    if (a.count(name) == 0) return fmt::format("tensor '{}' only in the second", name);
  }
  return "";
}

// Generic layout invariants: pack is a deterministic function that leaves its inputs alone, and
// unpack of freshly allocated output images leaves them alone and yields every output. (That the
// outputs have the reference's shapes and values is the comparison's job, in the runner.)
std::string check_layout(const Problem& problem, const TensorMap& inputs, const TensorMap& packed) {
  const TensorMap pristine = clone_map(inputs);
  const TensorMap again = problem.pack(inputs);
  if (auto d = map_difference(packed, again); !d.empty()) return "pack is not deterministic: " + d;
  if (auto d = map_difference(inputs, pristine); !d.empty()) return "pack modified its canonical inputs: " + d;
  TensorMap images;
  for (const auto& [name, spec] : problem.output_images()) images[name] = Tensor::zeros(spec.dtype, spec.shape);
  const TensorMap before = clone_map(images);
  const TensorMap got = problem.unpack(images);
  if (auto d = map_difference(images, before); !d.empty()) return "unpack modified the output images: " + d;
  for (const std::string& name : problem.output_names()) {
    if (got.count(name) == 0) return fmt::format("unpack yields no output '{}'", name);
  }
  return "";
}

}  // namespace

std::string identity_layout(const Problem& problem, const TensorMap& canonical, const TensorMap& packed) {
  if (auto d = map_difference(canonical, packed); !d.empty()) return "pack is not the identity: " + d;
  TensorMap images;
  for (const auto& [name, spec] : problem.output_images()) {
    Tensor t = Tensor::zeros(spec.dtype, spec.shape);
    for (size_t i = 0; i < t.nbytes(); ++i) t.data()[i] = static_cast<uint8_t>(i % 251);
    images[name] = t;
  }
  if (auto d = map_difference(images, problem.unpack(images)); !d.empty()) return "unpack is not the identity: " + d;
  return "";
}

std::string rejection_problem(const Status& st) {
  // kInvalidCase is how validate reports a documented precondition that the kernel trusts instead
  // of checking (e.g. FfnWorkerBatching's outNum <= A): the case is not a call to test, not a bug.
  if (st.code() == StatusCode::kInvalidCase) return "";
  if (st.code() != StatusCode::kAclnnError) {
    return fmt::format("rejected as {} instead of with an aclnn code: {}", status_code_name(st.code()), st.message());
  }
  if (st.aclnn_code() == 0) return "rejected with aclnn code 0: " + st.message();
  return "";
}

void report_finding(const std::string& target, const std::string& kind, const std::string& what, const Case* c) {
  std::fprintf(stderr, "==opgate-fuzz== finding %s in %s: %s\n", kind.c_str(), target.c_str(), what.c_str());
  if (c != nullptr) std::fprintf(stderr, "==opgate-fuzz== case: %s\n", encode_case(*c).c_str());
  std::fflush(stderr);
  std::abort();
}

int run_op_target(const char* stem, const uint8_t* data, size_t size, const LayoutCheck& layout_check) {
  static const OpInfo* const op = find_op(stem);
  const std::string target = fmt::format("fuzz_{}", stem);
  if (op == nullptr) report_finding(target, "unknown-operator", fmt::format("'{}' is not in OPGATE_OPS", stem));
  const bool from_text = is_case_text(data, size);
  auto decoded = decode_input(*op, data, size);
  if (!decoded) return 0;  // malformed case text is fuzz_case_json's subject
  Case c = std::move(*decoded);

  auto parsed = op->parse(c.params, c.tensors);
  if (!parsed) {
    if (from_text) return 0;
    report_finding(target, "generator-unparsable", parsed.status().message(), &c);
  }
  const Problem& problem = **parsed;
  auto reparsed = op->parse(problem.params_json(), c.tensors);
  if (!reparsed || (*reparsed)->params_json() != problem.params_json()) {
    report_finding(target, "params-roundtrip",
                   fmt::format("params_json {} does not parse back to itself{}", problem.params_json().dump(),
                               reparsed ? "" : ": " + reparsed.status().message()),
                   &c);
  }

  const Status valid = problem.validate();
  if (!valid.is_ok()) {
    if (auto why = rejection_problem(valid); !why.empty()) report_finding(target, "reject-without-code", why, &c);
    return 0;
  }
  if (total_elements(problem.specs()) > max_elements() ||
      total_elements(problem.output_images()) > max_elements()) {
    return 0;
  }

  auto filled = problem.fill(c.fill, c.seed);
  if (!filled) {
    if (from_text && filled.status().code() == StatusCode::kInvalidCase) return 0;
    report_finding(target, "fill-failed", filled.status().message(), &c);
  }
  const TensorMap& inputs = *filled;
  if (!problem.check_data(inputs).is_ok()) return 0;  // data the kernel does not define
  auto refilled = problem.fill(c.fill, c.seed);
  if (!refilled || !map_difference(inputs, *refilled).empty()) {
    report_finding(target, "fill-nondeterministic",
                   refilled ? map_difference(inputs, *refilled) : refilled.status().message(), &c);
  }

  // The reference runs once, inside the runner below: it dominates the cost of an execution.
  const TensorMap packed = problem.pack(inputs);
  if (auto why = check_layout(problem, inputs, packed); !why.empty()) {
    report_finding(target, "layout", why, &c);
  }
  if (layout_check) {
    const std::string why = layout_check(problem, inputs, packed);
    if (!why.empty()) report_finding(target, "layout-roundtrip", why, &c);
  }

  RunOptions opt;
  opt.isolate = false;
  Backend& backend = fuzz_backend();
  const CaseResult r = run_case(c, backend, opt);
  if (r.verdict != Verdict::kPassed && r.verdict != Verdict::kMistrusted && r.verdict != Verdict::kSkipped) {
    std::string kind = fmt::format("verdict-{}", verdict_name(r.verdict));
    for (char& ch : kind) ch = ch == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    report_finding(target, kind,
                   fmt::format("{} on {}: {}\n{}", verdict_name(r.verdict), backend.name(), r.reason,
                               describe_result(r)),
                   &c);
  }
  return 0;
}

}  // namespace opgate::fuzz
