// report.html: one self-contained page (inline CSS, JS and SVG; nothing fetched) with the run's
// counts and settings, a per-operator summary (counts by verdict, worst budget_used), the failing
// cases first (reason, repro, link to failed/<id>.json, worst elements in domain terms), and every
// case in a table filterable by operator, verdict and text and sortable by any column, with per
// output its error metrics and ULP histogram. The filter is also read from and written to the URL
// fragment (report.html#verdict=FAILED&op=...&text=...), so a filtered view is a shareable link.
// With `baseline` (a run gated with --baseline), a section with the change counts and each finding
// (new failures, missing cases, drift, ...) against the baseline at `baseline_path`.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/baseline.h"
#include "core/report_folder.h"

namespace opgate {

// One output's budget_used over the last runs of the history (oldest first), for the trend chart
// of a run recorded with --history. `failed[i]`: the output failed in that run; NaN: not measured.
struct BudgetTrend {
  std::string case_id, output;
  std::vector<std::string> runs;  // labels, e.g. "run 7 (rev abc)"
  std::vector<double> budget;
  std::vector<bool> failed;
  std::vector<std::string> dates;  // each run's start (ISO UTC) and kernel rev, for the axis; may be empty
  std::vector<std::string> revs;
};

std::string render_html_report(const nlohmann::json& run_info, const std::vector<CaseResult>& results,
                               const VerdictCounts& counts, const BaselineDiff* baseline = nullptr,
                               const std::string& baseline_path = "",
                               const std::vector<BudgetTrend>* trends = nullptr);

}  // namespace opgate
