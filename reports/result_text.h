// Human-readable detail of a case result, shared by the terminal, summary and junit.xml.
#pragma once

#include <string>

#include "core/result.h"

namespace opgate {

// One element in the units of its dtype `t`: the value the device should give and the one it gave
// (each in the fewest digits that read back in `t`), their distance in ulps of `t` (an integer
// output: the difference), the error and the allowance, then the fp64 reference.
std::string point_text(DType t, const ComparePoint& p);

// Multi-line detail: each failing output (with its dtype), its standards unless `standards` is
// false, and its worst elements with their domain index and position (point_text).
std::string describe_result(const CaseResult& r, int max_points = 5, bool standards = true);

}  // namespace opgate
