// Human-readable detail of a case result, shared by the terminal, summary and junit.xml.
#pragma once

#include <string>

#include "core/result.h"

namespace opgate {

// Multi-line detail: each failing output's worst elements with their domain index and position,
// expected (and as the device dtype), got, the difference and the allowance.
std::string describe_result(const CaseResult& r, int max_points = 5);

}  // namespace opgate
