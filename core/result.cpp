// Verdict names and which verdicts fail a gate.
#include "core/result.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace opgate {
namespace {

constexpr const char* kVerdictNames[kVerdictCount] = {
    "PASSED", "FAILED", "MISTRUSTED", "SKIPPED", "EXPECTED_REJECT", "INVALID_CASE", "BACKEND_ERROR",
    "TIMEOUT", "CRASHED"};

}  // namespace

const char* verdict_name(Verdict v) { return kVerdictNames[static_cast<size_t>(v)]; }

Expected<Verdict> parse_verdict(const std::string& name) {
  for (size_t i = 0; i < kVerdictCount; ++i) {
    if (name == kVerdictNames[i]) return static_cast<Verdict>(i);
  }
  return parse_error(fmt::format("unknown verdict '{}'", name));
}

bool verdict_fails(Verdict v, bool strict) {
  switch (v) {
    case Verdict::kFailed:
    case Verdict::kInvalidCase:
    case Verdict::kBackendError:
    case Verdict::kTimeout:
    case Verdict::kCrashed: return true;
    case Verdict::kMistrusted: return strict;
    default: return false;
  }
}

const std::array<StageField, 15>& stage_fields() {
  static const std::array<StageField, 15> fields = {{{"parse", &StageTimes::parse},
                                                     {"validate", &StageTimes::validate},
                                                     {"fill", &StageTimes::fill},
                                                     {"reference", &StageTimes::reference},
                                                     {"pack", &StageTimes::pack},
                                                     {"golden", &StageTimes::golden},
                                                     {"plan", &StageTimes::plan},
                                                     {"device", &StageTimes::device},
                                                     {"guards", &StageTimes::guards},
                                                     {"unpack", &StageTimes::unpack},
                                                     {"compare", &StageTimes::compare},
                                                     {"twin", &StageTimes::twin},
                                                     {"vacuity", &StageTimes::vacuity},
                                                     {"determinism", &StageTimes::determinism},
                                                     {"transfer", &StageTimes::transfer}}};
  return fields;
}

std::string stage_time_line(const std::vector<CaseResult>& results) {
  std::vector<std::pair<double, const char*>> totals;
  double sum = 0;
  for (const StageField& f : stage_fields()) {
    double total = 0;
    for (const CaseResult& r : results) total += r.stages_ms.*f.ms;
    totals.emplace_back(total, f.name);
    sum += total;
  }
  if (!(sum > 0)) return "";
  // Largest first; equal totals in pipeline order, so the line is the same for the same times.
  std::stable_sort(totals.begin(), totals.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string line = fmt::format("where the time went: {:.3f} s in stages:", sum / 1000);
  for (const auto& [total, name] : totals) {
    if (total > 0) line += fmt::format(" {} {:.3f} s ({:.1f}%),", name, total / 1000, 100 * total / sum);
  }
  line.back() = '\n';
  return line;
}

}  // namespace opgate
