// Verdicts and per-case results (DESIGN.md §7): typed from the runner to the report writers; JSON
// only at the edges (results.jsonl, the case child's pipe, failed/<id>.json), through
// core/result_json.h.
#pragma once

#include <array>
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

// Wall time of each stage of harness/stages.h in ms (issue 15 part 4); 0 for a stage the case did
// not reach. `golden` is the golden-expected check of stage (5), `plan` how each output will be
// compared (Problem::compare_plan, before the device runs), `guards` stage (7) with the digests of
// the inputs it checks against, `compare` stage (9). `transfer` is what the
// child process costs a case run in isolation (fork, result to JSON, pipe, parse: the parent's wall
// time minus the child's ms.total), so it is outside ms.total; the other stages lie inside it. The
// child's exit (the kernel freeing its tensors) is in no stage: the parent does not wait for it, and
// it overlaps the next case (core/child_process.h).
struct StageTimes {
  double parse = 0, validate = 0, fill = 0, reference = 0, pack = 0, golden = 0, plan = 0, device = 0, guards = 0,
         unpack = 0, compare = 0, twin = 0, vacuity = 0, determinism = 0, transfer = 0;
};
struct StageField {
  const char* name;  // the key in results.jsonl "stages_ms"
  double StageTimes::*ms;
};
// Every stage in pipeline order: the one list the serializer, the parser and the summary read.
const std::array<StageField, 15>& stage_fields();
// summary.txt's "where the time went" line: each stage's total over `results`, largest first, with
// its share of the sum; "" when nothing was timed.
struct CaseResult;
std::string stage_time_line(const std::vector<CaseResult>& results);

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
  double fill_ms = 0, reference_ms = 0, device_ms = 0, total_ms = 0;  // reference_ms: stages 4-5
  StageTimes stages_ms;
};

}  // namespace opgate
