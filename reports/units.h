// Numbers in the units people use (issue 24): ulp distances in the output's dtype, values at the
// precision of their dtype, budget_used as a bounded figure. For the terminal, summary.txt, junit
// and report.html; results.jsonl and failed/<id>.json keep the raw doubles.
#pragma once

#include <string>

#include "core/dtype.h"

namespace opgate {

// How many steps of `t` lie between a and b: for a float dtype the count of representable values
// passed going from one to the other (each value rounded to `t` first; -0 and +0 are one value,
// so 1.0 -> 1.0009765625 in fp16 is 1 and -2^-24 -> 2^-24 is 2); for an integer dtype |a - b|.
// NaN when either value is NaN.
double ulp_distance(DType t, double a, double b);
// "1 ulp", "3.2e+04 ulp" ("n/a ulp" for NaN); integer dtypes: "off by 3".
std::string ulp_text(DType t, double distance);

// A value of `t` in the fewest significant digits that read back to the same value of `t`
// (fp16 needs at most 5, bf16 4, fp32 9, fp64 17); an integer dtype as an integer; nan, inf, -inf.
std::string value_text(DType t, double v);
// A reference value (fp64, not rounded to `t`) at the dtype's precision plus two digits: enough to
// see where it lies between two neighbours of `t`.
std::string reference_text(DType t, double v);
// An error or allowance: three significant digits.
std::string short_text(double v);

// budget_used (worst |error| / allowance; 1 is at the tolerance) bounded and readable: "0",
// "<=0.01", "0.43", "2.1x over", "44x over", ">1000x over" (1000 or more, inf); "n/a" for NaN.
std::string budget_text(double b);

}  // namespace opgate
