// Verdicts, per-case results and the report writers: summary.txt, results.jsonl (appended as each
// case finishes), failed/<id>.json, junit.xml and report.html (DESIGN.md §7, style-and-layout.md B8).
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

struct CaseResult {
  std::string id;
  std::string op;
  std::string tier;
  std::string backend;
  Verdict verdict = Verdict::kPassed;
  std::string reason;               // one line: why this verdict
  std::string repro;                // one-line command that reruns the case
  nlohmann::json outputs = nlohmann::json::array();  // CompareResult JSON per output
  nlohmann::json case_json;         // the case itself (for failed/<id>.json and `opgate repro`)
  int repeats = 1;
  bool determinism_checked = false;
  double fill_ms = 0, reference_ms = 0, device_ms = 0, total_ms = 0;
};

nlohmann::json to_json(const CaseResult& r);
Expected<CaseResult> case_result_from_json(const nlohmann::json& j);

using VerdictCounts = std::array<int64_t, kVerdictCount>;
int gate_exit_code(const VerdictCounts& counts, bool strict);
// "cases:12 passed:10 failed:1 ..." — the closing counter line.
std::string counts_line(const VerdictCounts& counts);

// The run info fields that give a result its meaning; `--resume` refuses a run that differs in any.
constexpr std::array<const char*, 4> kResumeFields = {"backend", "repeat", "against", "shard"};

// A report folder's run info and the file it came from: run.json, else the first line of
// summary.txt (folders written before run.json); `info` is null when neither exists.
struct RunInfoFile {
  std::string path;
  nlohmann::json info;
};
Expected<RunInfoFile> read_run_info(const std::string& dir);

class ReportWriter {
 public:
  // Creates `dir` (and failed/) and writes run.json. With `resume`, first refuses a run_info that
  // differs from the folder's in a kResumeFields field, then cuts a partial last line off
  // results.jsonl and remembers the case ids it holds. Nothing is written when it fails.
  static Expected<ReportWriter> open(const std::string& dir, const nlohmann::json& run_info, bool resume);
  const std::set<std::string>& done_ids() const { return done_; }
  // Appends one line to results.jsonl and flushes it; failures also get failed/<id>.json.
  Status append(const CaseResult& r);
  // Writes summary.txt, junit.xml and report.html from every result in results.jsonl (atomically).
  Status finish();
  const VerdictCounts& counts() const { return counts_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  nlohmann::json run_info_;
  std::set<std::string> done_;
  VerdictCounts counts_{};
};

// Reads every CaseResult of a results.jsonl (used by resume, `opgate merge` and baselines); a
// missing file holds no results. Blank lines are skipped, and so is a malformed last line without
// its newline (a crash cut it short; resume runs that case again). Any other malformed line is an
// error "<path>: line N: malformed JSON: ...".
Expected<std::vector<CaseResult>> read_results(const std::string& path);

}  // namespace opgate
