// Ascend's standards per operator output across a run (issue 25): for each (operator, output), how
// many cases passed, failed or were not judged under the gate and under each standard, and the
// fewest effective bits seen. summary.txt prints it as text, report.html as a table, junit.xml as
// properties, so "passes v0.3, passes the old standard" is one glance.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace opgate {

struct StandardTally {
  int passed = 0, failed = 0, not_applicable = 0;
};

struct OutputStandards {
  std::string gate;                              // the gating standard(s), e.g. "bound" or "exact"
  StandardTally gated;                           // the gating verdict
  std::map<std::string, StandardTally> standards;  // by name, in name order
  double fewest_bits = 53;                       // effective bits, over the cases' tolerance outputs
  bool has_bits = false;
};

// Keyed by (operator stem, output name). Cases without compared outputs contribute nothing.
std::map<std::pair<std::string, std::string>, OutputStandards> tally_standards(const std::vector<CaseResult>& results);
std::map<std::pair<std::string, std::string>, OutputStandards> tally_standards(
    const std::vector<const CaseResult*>& results);

// "12 passed, 0 failed, 3 n/a" without the zero parts, or "-" when nothing was judged.
std::string tally_text(const StandardTally& t);

// The summary.txt block: a heading line and one line per output; empty when no output was compared.
std::string standards_summary(const std::vector<CaseResult>& results);

}  // namespace opgate
