// The questions the run history answers, as data (history_format renders them): which cases fail
// now and since when, which flip without a kernel change, how an output's budget_used moves, and
// which run started a failure streak. Runs are ordered by run_id (the order they started).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "history/history_db.h"

namespace opgate::history {

struct RunRef {
  int64_t run_id = 0;
  std::string started_at;
  std::string kernel_rev;  // empty: not given
  std::string backend;
  std::string soc;    // empty: the backend reports none
  std::string state;  // finished, interrupted (never ended: killed), running (its process is alive here)
};

// One case's result in one run.
struct CaseRun {
  RunRef run;
  std::string verdict;
  std::string reason;
};

// FAILED, BACKEND_ERROR, INVALID_CASE, TIMEOUT, CRASHED: what fails a gate without --strict.
bool is_failing_verdict(const std::string& verdict);

struct FailingCase {
  std::string case_id, op;
  CaseRun now;          // the latest result
  CaseRun since;        // the first result of the current failure streak
  int64_t streak = 0;   // failing results in the streak
};

// Cases whose latest result fails, with the start of their streak; SKIPPED results neither break
// nor extend a streak. `since`: empty, a run id, or a UTC date/time (2026-12-01 or
// 2026-12-01T18:00:00Z): only streaks that started at or after it.
Expected<std::vector<FailingCase>> failing_cases(const HistoryDb& db, const std::string& since);

struct FlakyCase {
  std::string case_id, op, kernel_rev, backend, soc;
  std::vector<CaseRun> runs;  // the case's results with this kernel rev, backend and SoC, SKIPPED left out
  int64_t flips = 0;          // verdict changes between consecutive results
};

// Cases whose verdict changed between runs of one kernel rev on one backend and SoC (a fault night
// beside an emu night is two devices, not a flaky kernel; runs without --kernel-rev left out);
// `*unrevisioned` gets the number of runs without a kernel rev.
Expected<std::vector<FlakyCase>> flaky_cases(const HistoryDb& db, int64_t* unrevisioned);

// One recorded run as `history runs` lists it.
struct RecordedRun {
  RunRef run;
  std::string ended_at;                   // empty: never ended
  std::optional<int64_t> exit_code;       // none: never ended
  std::string shard, host, tiers;         // tiers: the selection's, comma-separated ("" for case files)
  std::map<std::string, int64_t> verdicts;  // verdict -> cases
  int64_t cases = 0;
};

// The recorded runs, oldest first; `last` > 0: only the last N.
Expected<std::vector<RecordedRun>> recorded_runs(const HistoryDb& db, int64_t last);

struct TrendPoint {
  CaseRun result;
  std::map<std::string, double> budget_used;  // by output; NaN: not measured; absent: no such output then
  std::map<std::string, bool> passed;         // by output
};

struct Trend {
  std::string case_id;
  std::vector<std::string> outputs;  // in name order
  std::vector<TrendPoint> points;    // oldest first
};

// budget_used of the case's outputs (or one, `output`) over its last `last` results.
Expected<Trend> budget_trend(const HistoryDb& db, const std::string& case_id, const std::string& output,
                             int64_t last);

struct FirstBad {
  std::string case_id;
  CaseRun latest;
  std::optional<CaseRun> first_bad;  // set when the latest result fails
  std::optional<CaseRun> last_good;  // the result before the streak; empty if it failed from the start
  int64_t streak = 0;
};

Expected<FirstBad> first_bad(const HistoryDb& db, const std::string& case_id);

}  // namespace opgate::history
