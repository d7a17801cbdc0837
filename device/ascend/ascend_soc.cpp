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

namespace {

// Reads a decimal number at `at`, advancing it; false without digits or beyond 9 digits.
bool read_number(const std::string& s, size_t& at, int& out) {
  size_t end = at;
  while (end < s.size() && end - at < 9 && s[end] >= '0' && s[end] <= '9') ++end;
  if (end == at || (end < s.size() && s[end] >= '0' && s[end] <= '9')) return false;
  out = std::stoi(s.substr(at, end - at));
  at = end;
  return true;
}

}  // namespace

bool cann_at_least(const std::string& version, int major, int minor, int patch) {
  size_t at = 0;
  int v_major = 0, v_minor = 0, v_patch = 0;
  if (!read_number(version, at, v_major) || at >= version.size() || version[at] != '.') return false;
  ++at;
  if (!read_number(version, at, v_minor)) return false;
  // A third component that is not a number (RC1, T5, alpha001) marks a pre-release of x.y.0.
  bool release = at + 1 < version.size() && version[at] == '.' && version[at + 1] >= '0' && version[at + 1] <= '9';
  if (release) {
    ++at;
    release = read_number(version, at, v_patch);
    if (!release) return false;
  }
  if (v_major != major) return v_major > major;
  if (v_minor != minor) return v_minor > minor;
  if (!release) return false;  // x.y.RCn < x.y.0 <= x.y.patch
  return v_patch >= patch;
}

}  // namespace opgate::ascend
