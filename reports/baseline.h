// Baselines (DESIGN.md §1: nightly gates compare against the last accepted baseline). A baseline is
// the results.jsonl of an accepted run. Comparing a run with it tells which cases newly fail, which
// were fixed, which vanished from the case files, and which outputs still pass but use clearly more
// of their tolerance than before (accuracy drift, seen before it becomes a failure).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/report_folder.h"
#include "core/status.h"

namespace opgate {

enum class BaselineChange {
  kNewFailure,    // fails now; passed before, was absent, or failed with another verdict
  kMissing,       // in the baseline and in this run's scope, but not run
  kDrift,         // passes, but an output's tolerance use grew past the drift thresholds
  kStillFailing,  // fails now with the verdict it had in the baseline
  kFixed,         // failed in the baseline, does not fail now
  kChanged,       // another verdict change that fails neither run (e.g. PASSED -> SKIPPED)
  kNewCase,       // not in the baseline, does not fail
};
const char* baseline_change_name(BaselineChange c);

struct BaselineOptions {
  // An output drifts when budget_used (worst |error| / allowance) grows by more than drift_factor
  // and ends above drift_floor: doubling from 1% to 2% of the tolerance is noise, from 20% to 60%
  // is a kernel that got less accurate.
  double drift_factor = 2.0;
  double drift_floor = 0.25;
  bool strict = false;  // MISTRUSTED counts as failing, as in the gate
};

struct BaselineFinding {
  BaselineChange change = BaselineChange::kNewCase;
  std::string id;
  std::string before;  // verdict in the baseline ("" when absent)
  std::string after;   // verdict now ("" when missing)
  std::string detail;  // one line: the reason now, or "y: tolerance used 0.21 -> 0.64"
};

struct BaselineDiff {
  std::vector<BaselineFinding> findings;  // ordered by change (most serious first), then id
  int64_t unchanged = 0;
  int64_t count(BaselineChange c) const;
};

// Which baseline cases the current run was meant to run; the others are never reported missing.
using BaselineScope = std::function<bool(const CaseResult& baseline_case)>;

BaselineDiff diff_with_baseline(const std::vector<CaseResult>& baseline, const std::vector<CaseResult>& current,
                                const BaselineOptions& opt, const BaselineScope& in_scope);

struct BaselinePolicy {
  bool allow_known_failures = false;  // a failure the baseline already had does not fail the gate
  bool fail_on_drift = false;
  bool strict = false;
};
// 1 when the gate fails: any failing case (only new ones with allow_known_failures), any missing
// case, and drift when asked; else 0.
int baseline_exit_code(const std::vector<CaseResult>& current, const BaselineDiff& diff, const BaselinePolicy& p);

// The counter line and one line per finding, most serious first.
std::string baseline_text(const BaselineDiff& diff, const std::string& baseline_path);
nlohmann::json to_json(const BaselineDiff& diff);

// A baseline is a report folder (its results.jsonl) or a results.jsonl file.
Expected<std::vector<CaseResult>> read_baseline(const std::string& path);
// Installs a report's results.jsonl as the baseline in `dir` (atomically), with baseline.json
// recording where it came from (absolute), its counts and the backend, against and repeat of its
// run.json. `report` is a report folder or its results.jsonl. Refused: an unfinished run (fewer
// results than it selected) and one shard of a split run (merge the shards first).
Status accept_baseline(const std::string& report, const std::string& dir, const std::string& harness_version);
// When the baseline's baseline.json records a backend or against other than the report folder's
// run.json, one line saying so (a warning: the comparison is likely meaningless); else "".
Expected<std::string> baseline_config_mismatch(const std::string& baseline_path, const std::string& report_dir);

}  // namespace opgate
