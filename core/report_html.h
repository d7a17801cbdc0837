// report.html: a self-contained page (no scripts, no external files) with the run's counts, every
// case's verdict and, per output, its error metrics and ULP histogram as an inline SVG bar chart.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/report.h"

namespace opgate {

std::string render_html_report(const nlohmann::json& run_info, const std::vector<CaseResult>& results,
                               const VerdictCounts& counts);

}  // namespace opgate
