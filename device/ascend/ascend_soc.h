// SoC names as aclrtGetSocName reports them, grouped into the product families the operator
// documentation's support tables name (Atlas A2, Atlas A3, Ascend 950, Atlas inference series).
#pragma once

#include <initializer_list>
#include <string>

#include "core/backend.h"

namespace opgate::ascend {

enum class SocFamily {
  kUnknown,
  kA2,             // Ascend910B1..B4, B2C, B4-1: Atlas A2 training / inference series
  kA3,             // Ascend910_93xx: Atlas A3 training / inference series
  kAscend950,      // Ascend950PR_xxxx, Ascend950DT_xxxx, Ascend910_95xx
  kInference310P,  // Ascend310P*: Atlas inference series
  kTraining910,    // Ascend910A, Ascend910ProA/ProB, Ascend910PremiumA, Ascend910B: Atlas training series
  kAtlas310B,      // Ascend310B*: Atlas 200I/500 A2 inference products
};

struct SocInfo {
  std::string name;  // aclrtGetSocName, e.g. "Ascend910B3"
  SocFamily family = SocFamily::kUnknown;
  std::string cann_version;  // aclsysGetCANNVersion, e.g. "8.0.0", "8.3.RC1"; "" or "unknown (..)"
};

// Whether a CANN version string is at least major.minor.patch. Release strings are
// <major>.<minor>.<patch>[...]; a pre-release (8.0.RC1, 8.0.T5, 8.0.alpha001) precedes
// <major>.<minor>.0 and counts as below it. False when the string cannot be read: a caller that
// needs a version must not guess it.
bool cann_at_least(const std::string& version, int major, int minor, int patch);

SocFamily soc_family(const std::string& soc_name);
// "Atlas A2", "Atlas A3", "Ascend 950", "Atlas inference series (310P)", ...
const char* soc_family_name(SocFamily family);

// The verdict of a documentation support table: yes when the SoC's family is listed; no, with a
// reason naming the SoC, its family and `doc` (the operator and where the table is), otherwise.
// An unknown SoC is given a chance: the device itself then decides.
Support documented_support(const SocInfo& soc, std::initializer_list<SocFamily> listed, const char* doc);

}  // namespace opgate::ascend
