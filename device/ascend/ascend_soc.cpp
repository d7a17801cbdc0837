// SoC-name classification (names as in the runtime's SoC tables, e.g. hixl kSocV2/kSocV3 and the
// msopprof L2 table) and the support-table verdicts built on it.
#include "device/ascend/ascend_soc.h"

#include <fmt/format.h>

namespace opgate::ascend {
namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

SocFamily soc_family(const std::string& n) {
  if (starts_with(n, "Ascend910_93")) return SocFamily::kA3;
  if (starts_with(n, "Ascend950") || starts_with(n, "Ascend910_95")) return SocFamily::kAscend950;
  if (starts_with(n, "Ascend910B") && n.size() > 10 && n[10] >= '1' && n[10] <= '9') return SocFamily::kA2;
  if (starts_with(n, "Ascend310P")) return SocFamily::kInference310P;
  if (starts_with(n, "Ascend310B")) return SocFamily::kAtlas310B;
  if (n == "Ascend910" || n == "Ascend910A" || n == "Ascend910B" || starts_with(n, "Ascend910Pro") ||
      starts_with(n, "Ascend910Premium")) {
    return SocFamily::kTraining910;
  }
  return SocFamily::kUnknown;
}

const char* soc_family_name(SocFamily family) {
  switch (family) {
    case SocFamily::kA2: return "Atlas A2";
    case SocFamily::kA3: return "Atlas A3";
    case SocFamily::kAscend950: return "Ascend 950";
    case SocFamily::kInference310P: return "Atlas inference series (310P)";
    case SocFamily::kTraining910: return "Atlas training series (910)";
    case SocFamily::kAtlas310B: return "Atlas 200I/500 A2 (310B)";
    case SocFamily::kUnknown: break;
  }
  return "unknown family";
}

Support documented_support(const SocInfo& soc, std::initializer_list<SocFamily> listed, const char* doc) {
  if (soc.family == SocFamily::kUnknown) return {};
  std::string names;
  for (SocFamily f : listed) {
    if (f == soc.family) return {};
    names += (names.empty() ? "" : ", ") + std::string(soc_family_name(f));
  }
  return {false, fmt::format("{} is {}; {} lists only {}", soc.name, soc_family_name(soc.family), doc, names)};
}

}  // namespace opgate::ascend
