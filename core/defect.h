// A named, realistic kernel defect that the fault backend injects into the emulator (DESIGN.md §4).
#pragma once

#include <string>
#include <vector>

namespace opgate {

struct DefectInfo {
  std::string name;         // "<short op>.<what>", e.g. "mfrg.zero_fill_in_dropless"
  std::string description;  // one sentence: what a kernel with this bug does
};

}  // namespace opgate
