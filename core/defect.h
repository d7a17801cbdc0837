// A named, realistic kernel defect that the fault backend injects into the emulator (DESIGN.md §4).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/status.h"

namespace opgate {

struct DefectInfo {
  std::string name;         // "<short op>.<what>", e.g. "mfrg.zero_fill_in_dropless"
  std::string description;  // one sentence: what a kernel with this bug does
};

// One row of an emulator's defect catalogue: the switch it sets, its name and what it does.
template <class Id>
struct DefectEntry {
  Id id;
  const char* name;
  const char* description;
};

// The catalogue as `opgate list --defects` prints it.
template <class Id, size_t N>
std::vector<DefectInfo> defect_infos(const DefectEntry<Id> (&catalogue)[N]) {
  std::vector<DefectInfo> out;
  for (const auto& d : catalogue) out.push_back({d.name, d.description});
  return out;
}

// The switch of the defect named `name`; `none` for "" (the faithful emulator).
template <class Id, size_t N>
Expected<Id> parse_defect(const DefectEntry<Id> (&catalogue)[N], Id none, const std::string& name,
                          const std::string& op) {
  if (name.empty()) return none;
  for (const auto& d : catalogue) {
    if (name == d.name) return d.id;
  }
  return internal_error(fmt::format("unknown defect '{}' for {}", name, op));
}

}  // namespace opgate
