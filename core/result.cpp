// Verdict names and which verdicts fail a gate.
#include "core/result.h"

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

}  // namespace opgate
