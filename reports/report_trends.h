// The trend of each failing output over the recorded runs (`opgate run --history`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/status.h"
#include "reports/report_html.h"

namespace opgate {

// budget_used of the failing outputs of `results` over the last `last` runs of the history file.
Expected<std::vector<BudgetTrend>> history_trends(const std::string& history_path,
                                                  const std::vector<CaseResult>& results, int64_t last = 10);

// What a trend says, or "" when it is flat (the same value and verdict in every run): "new failure"
// (passed, then failed from one run on), "flaky (N flips)" (between passed and failed), "drift"
// (the value moved by more than a tenth of the largest).
std::string trend_story(const BudgetTrend& t);
// report.html's trends section (reports/report_trends_html.cpp): the telling trends first, the flat
// ones collapsed into one row per shape.
std::string trends_section(const std::vector<BudgetTrend>& trends);

}  // namespace opgate
