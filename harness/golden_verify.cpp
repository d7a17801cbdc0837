// `golden verify`: a golden folder against its contract, the current case files and a
// recomputation, with the most basic cause of any mismatch first.
#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "harness/golden.h"
#include "harness/golden_folder.h"
#include "core/json_read.h"
#include "core/npy.h"
#include "cases/registry.h"

namespace opgate {
namespace {

using golden_folder::last_part;
using golden_folder::parent_of;

// Expected values agree when equal up to a few double ulps (libm may differ in the last bit).
bool close_f64(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;
  return std::fabs(a - b) <= 4 * std::fabs(std::nextafter(std::max(std::fabs(a), std::fabs(b)), INFINITY) -
                                           std::max(std::fabs(a), std::fabs(b)));
}

// The golden case against the case files: the case of that id must still exist, unchanged.
void check_against_case_files(const std::string& dir, const nlohmann::json& golden_case, const std::string& stem,
                              const std::vector<Case>& current,
                              const std::function<void(const std::string&, const std::string&)>& fail) {
  const std::string id = last_part(dir);
  const Case* now = nullptr;
  for (const auto& c : current) {
    if (c.op == stem && c.id == id) now = &c;
  }
  if (now == nullptr) {
    fail("case removed",
         fmt::format("{}: no case file holds case '{}' any more; `opgate golden regen --op {}` removes the folder",
                     dir, id, stem));
    return;
  }
  auto problem = make_problem(*now);
  if (!problem) {
    fail("case changed", fmt::format("{}: {}", dir, problem.status().message()));
    return;
  }
  for (const auto& d : case_differences(golden_case, golden_case_json(*now, **problem))) {
    fail("case changed", fmt::format("{}/case.json differs from {}: {}: golden {}, case file {}", dir,
                                     now->source.empty() ? "the case" : now->source, d.field, d.before, d.after));
  }
}

// Most basic first: a later cause may only be a consequence of an earlier one.
int cause_rank(const std::string& cause) {
  static const char* const kOrder[] = {"unreadable",        "file corrupted",     "stray file",
                                       "unsound tolerance", "case removed",       "case changed",
                                       "input generator changed", "reference changed", "magnitudes changed"};
  constexpr int kCauses = sizeof kOrder / sizeof kOrder[0];
  for (int i = 0; i < kCauses; ++i) {
    if (cause == kOrder[i]) return i;
  }
  return kCauses;
}

}  // namespace

std::string golden_values_differ(const Tensor& golden, const Tensor& fresh) {
  if (golden.defined() != fresh.defined()) return golden.defined() ? "no longer computed" : "not in the golden files";
  if (golden.shape() != fresh.shape()) {
    return fmt::format("shape {} vs {}", shape_to_string(golden.shape()), shape_to_string(fresh.shape()));
  }
  int64_t differing = 0, first = -1;
  for (int64_t i = 0; i < fresh.numel(); ++i) {
    if (close_f64(golden.get(i), fresh.get(i))) continue;
    if (differing++ == 0) first = i;
  }
  if (differing == 0) return "";
  return fmt::format("{} of {} elements differ, first at index {}: golden {:.17g}, reference {:.17g}", differing,
                     fresh.numel(), shape_to_string(fresh.unravel(first)), golden.get(first), fresh.get(first));
}

// Why recomputed tolerance magnitudes (or slack) may differ from the stored ones, for the details.
std::string tolerance_change_why(bool values_differ, int stored_version, const OpInfo* info) {
  if (values_differ) return " (the output's expected values changed too)";
  if (info && info->reference_version != stored_version) {
    return fmt::format(" (reference_version {} -> {})", stored_version, info->reference_version);
  }
  return " (expected values unchanged: the reference computes its bound differently, e.g. more cheaply; a run "
         "against golden would use the stored bound, against the reference the new one; review with `opgate "
         "golden diff` and regenerate)";
}

// Step 4 of verify_golden: each recomputed tensor file against the stored one; inputs come first,
// because changed inputs explain changed expected values, and expected values before the
// tolerance files of format 2 (their magnitudes and slack), which a changed value may explain.
template <class Fail>
void compare_recomputed(const std::string& dir, const std::vector<golden_folder::TensorFile>& files,
                        const golden_folder::LoadedFolder& f, const OpInfo* info, Fail&& fail) {
  const nlohmann::json& tensors = f.manifest["tensors"];
  const int stored_version = f.manifest["reference_version"].get<int>();
  const bool stores_tolerances = f.manifest["format"].get<int>() >= 2;
  std::set<std::string> seen, changed_outputs;
  bool inputs_differ = false;
  for (const auto& file : files) {
    if (file.meta.is_null()) continue;
    const std::string tolerance_of = golden_folder::tolerance_output(file.rel);
    if (!tolerance_of.empty() && !stores_tolerances) continue;  // format 1 stores none
    seen.insert(file.rel);
    if (!tensors.contains(file.rel)) {
      fail(file.rel.rfind("inputs/", 0) == 0 ? "input generator changed"
           : tolerance_of.empty()            ? "reference changed"
                                             : "magnitudes changed",
           fmt::format("{}: the recomputed case has {} but the golden has not", dir, file.rel));
      continue;
    }
    if (file.meta["sha256"] == tensors[file.rel]["sha256"]) continue;
    if (file.rel.rfind("inputs/", 0) == 0) {
      fail("input generator changed", fmt::format("{}/{}: regenerated input differs", dir, file.rel));
      inputs_differ = true;
      continue;
    }
    // Expected values and magnitudes may differ in the last bits of a double; compare values, not bytes.
    auto fresh = decode_npy(reinterpret_cast<const uint8_t*>(file.bytes.data()), file.bytes.size(), file.rel);
    const std::string why = fresh ? golden_values_differ(f.tensors.at(file.rel), *fresh) : fresh.status().message();
    if (why.empty()) continue;
    if (!tolerance_of.empty()) {
      fail(inputs_differ ? "input generator changed" : "magnitudes changed",
           fmt::format("{}/{}: recomputed tolerance {} differ: {}{}", dir, file.rel,
                       file.rel.find(".slack.") != std::string::npos ? "slack" : "magnitudes", why,
                       inputs_differ ? " (from the changed inputs)"
                                     : tolerance_change_why(changed_outputs.count(tolerance_of) > 0, stored_version, info)));
      continue;
    }
    changed_outputs.insert(file.rel.substr(9, file.rel.size() - 13));  // "expected/<name>.npy"
    fail(inputs_differ ? "input generator changed" : "reference changed",
         fmt::format("{}/{}: recomputed values differ: {}{}", dir, file.rel, why,
                     inputs_differ ? " (from the changed inputs)"
                     : info && info->reference_version != stored_version
                         ? fmt::format(" (reference_version {} -> {})", stored_version, info->reference_version)
                         : " (reference_version unchanged: an unintended semantic change?)"));
  }
  for (auto it = tensors.begin(); it != tensors.end(); ++it) {
    if (seen.count(it.key())) continue;
    fail(golden_folder::tolerance_output(it.key()).empty() ? "reference changed" : "magnitudes changed",
         fmt::format("{}/{}: no longer produced", dir, it.key()));
  }
}

GoldenCheck verify_golden(const std::string& dir, const std::vector<Case>& current) {
  GoldenCheck out;
  out.dir = dir;
  auto fail = [&](const std::string& cause, const std::string& detail) {
    out.ok = false;
    if (std::find(out.causes.begin(), out.causes.end(), cause) == out.causes.end()) out.causes.push_back(cause);
    out.details.push_back(detail);
  };
  auto finish = [&]() {
    std::stable_sort(out.causes.begin(), out.causes.end(),
                     [](const std::string& a, const std::string& b) { return cause_rank(a) < cause_rank(b); });
    out.cause = out.causes.empty() ? "" : out.causes.front();
    return out;
  };
  // 1. The folder fits the contract and every file matches its digest.
  golden_folder::LoadedFolder f = golden_folder::load_folder(dir);
  for (const auto& p : f.problems) fail("file corrupted", p);
  if (!out.ok) return finish();
  // Files the format does not have, temporary files of an interrupted write among them: harmless
  // to a run, but a sign that something other than regen wrote here.
  for (const auto& p : stray_golden_files(dir)) fail("stray file", p);
  auto cases = parse_cases_text(f.case_text, dir + "/case.json");
  if (!cases || cases->size() != 1) {
    fail("unreadable", cases ? dir + "/case.json: holds no single case" : cases.status().message());
    return finish();
  }
  const Case& c = cases->front();
  if (c.id != last_part(dir) || c.op != last_part(parent_of(dir))) {
    fail("file corrupted",
         fmt::format("{}/case.json: case '{}' of {} does not belong in this folder", dir, c.id, c.op));
    return finish();
  }
  // 1b. No stored tolerance accepts any value of an element whose expected value is finite.
  if (auto problem = make_problem(c)) {
    const RefOutputs stored = golden_folder::stored_outputs(f.tensors);
    if (const auto unsound = golden_folder::unsound_tolerance((*problem)->compare_plan(stored, plan_fill(c)), stored)) {
      fail("unsound tolerance", fmt::format("{}/{}: {} ({}) accepts any value there", dir, unsound->file,
                                            golden_folder::kUnsoundTolerance, unsound->what));
    }
  }
  // 2. The case files still hold this case, unchanged.
  auto golden_case = parse_json_bounded(f.case_text, dir + "/case.json");  // parsed above, so it parses
  check_against_case_files(dir, golden_case ? *golden_case : nlohmann::json(), c.op, current, fail);
  // 3. The reference is the version the golden files were made with.
  const OpInfo* info = find_op(c.op);
  const int stored_version = f.manifest["reference_version"].get<int>();
  if (info != nullptr && info->reference_version != stored_version) {
    fail("reference changed", fmt::format("{}/manifest.json: reference_version {}, the current reference is version {}",
                                          dir, stored_version, info->reference_version));
  }
  // 4. Recompute from the golden case and diagnose differences.
  auto computed = golden_folder::compute(c, f.manifest.value("harness_version", ""));
  if (!computed) {
    // A golden case too large to compute cannot be verified at all; one whose recomputed tolerance
    // is not finite could not be regenerated; any other failure (validate now rejects it, the data
    // checks fail) is a change of the reference.
    const std::string& why = computed.status().message();
    const bool unusable = why.find("over --max-case-bytes") != std::string::npos;
    const bool unsound = why.find(golden_folder::kUnsoundTolerance) != std::string::npos;
    fail(unusable ? "unreadable" : unsound ? "unsound tolerance" : "reference changed", why);
    return finish();
  }
  compare_recomputed(dir, computed->files, f, info, fail);
  return finish();
}

}  // namespace opgate
