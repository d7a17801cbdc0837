// The pages people read, rendered from a report folder's results: summary.txt, junit.xml and
// report.html (DESIGN.md §7). Above harness and history, so one writer can draw the trends too.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/report_folder.h"
#include "core/result.h"
#include "core/status.h"
#include "reports/report_html.h"

namespace opgate {

// summary.txt: what ran and how many failed, then every failure with its repro, where the time
// went; the run info JSON (read back by read_run_info for folders without run.json) and the
// closing counter line come last.
std::string summary_text(const nlohmann::json& run_info, const std::vector<CaseResult>& results,
                         const VerdictCounts& counts);

// Writes summary.txt, junit.xml and report.html from every result in the folder's results.jsonl
// (atomically) and sets the writer's counts. With `history` (the file the run records into),
// report.html carries the trends of the failing outputs in this one pass.
Status finish_report(ReportWriter& writer, const std::string& history = "");

// Writes report.html of `report_dir` again from its run.json and `current`, with the sections a
// run adds after its cases: the baseline comparison and the history trends (either may be null).
Status rewrite_report_html(const std::string& report_dir, const std::vector<CaseResult>& current,
                           const BaselineDiff* diff, const std::string& baseline_path,
                           const std::vector<BudgetTrend>* trends);

}  // namespace opgate
