// Verdicts and per-case results (DESIGN.md §7): typed from the runner to the report writers; JSON
// only at the edges (results.jsonl, the case child's pipe, failed/<id>.json), through
// core/result_json.h.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/compare.h"
#include "core/status.h"

namespace opgate {

enum class Verdict {
  kPassed,
  kFailed,
  kMistrusted,      // passed, but a perturbed output would have passed too (vacuous)
  kSkipped,         // the backend does not support the case
  kExpectedReject,  // invalid call rejected with the documented code
  kInvalidCase,     // the case file is wrong
  kBackendError,
  kTimeout,
  kCrashed,
};
constexpr size_t kVerdictCount = 9;

const char* verdict_name(Verdict v);
Expected<Verdict> parse_verdict(const std::string& name);
// FAILED, BACKEND_ERROR, INVALID_CASE, TIMEOUT and CRASHED fail a gate (MISTRUSTED with --strict).
bool verdict_fails(Verdict v, bool strict);

// One output of a case: how it was checked and what the comparison found.
struct OutputResult {
  OutputCheck plan;
  CompareResult compare;
};

struct CaseResult {
  std::string id;
  std::string op;
  std::string tier;
  std::string backend;
  Verdict verdict = Verdict::kPassed;
  std::string reason;               // one line: why this verdict
  std::string repro;                // one-line command that reruns the case
  std::vector<OutputResult> outputs;  // in the plan's order
  nlohmann::json case_json;         // the case itself (for failed/<id>.json and `opgate repro`)
  std::vector<std::string> warnings;  // findings that do not change the verdict (Backend::take_warnings)
  int repeats = 1;
  bool determinism_checked = false;
  double fill_ms = 0, reference_ms = 0, device_ms = 0, total_ms = 0;
};

}  // namespace opgate
