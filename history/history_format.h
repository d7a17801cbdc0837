// The history queries' answers as text (for people) and JSON (for machines).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "history/history_query.h"

namespace opgate::history {

std::string failing_text(const std::vector<FailingCase>& cases);
nlohmann::json failing_json(const std::vector<FailingCase>& cases);

std::string flaky_text(const std::vector<FlakyCase>& cases, int64_t unrevisioned);
nlohmann::json flaky_json(const std::vector<FlakyCase>& cases, int64_t unrevisioned);

std::string runs_text(const std::vector<RecordedRun>& runs);
nlohmann::json runs_json(const std::vector<RecordedRun>& runs);

std::string trend_text(const Trend& t);
nlohmann::json trend_json(const Trend& t);

std::string first_bad_text(const FirstBad& fb);
nlohmann::json first_bad_json(const FirstBad& fb);

// One character per value, ▁ (the smallest) to █ (the largest); '?' not measured, ' ' absent,
// '^' +inf.
std::string sparkline(const std::vector<double>& values, const std::vector<bool>& present);

}  // namespace opgate::history
