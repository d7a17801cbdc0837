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

}  // namespace opgate
