// report.html's first screen: the page title and the banner carry the verdict and the counts,
// then the date, host and kernel rev, so a red night is read from the tab and the first glance.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/report_folder.h"

namespace opgate {

// "FAILED · 3 failed, 237 passed — opgate ci 2026-12-07 host" (plain text; the caller escapes).
std::string report_title(const nlohmann::json& run_info, const VerdictCounts& counts);
// The banner (HTML): verdict and counts, then when, where, what.
std::string report_banner(const nlohmann::json& run_info, const VerdictCounts& counts);

}  // namespace opgate
