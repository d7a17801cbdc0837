// Exact rounding of a double to fp16, bf16 or fp32 (and the unit in the last place there) by
// scaling with the target's quantum: the same values as core/dtype.h round_to and ulp, without
// encoding to bits and back. The references call these in per-element loops (MoeFFN's hidden
// activation and its bounds); shared_round_test.cpp compares them with round_to and ulp.
#pragma once

#include "core/dtype.h"

namespace opgate::math {

// round_to(t, v, r) for every t, v and r; fp16, bf16 and fp32 of finite v take the fast path.
double round_fast(DType t, double v, Rounding r = Rounding::kNearestEven);

// ulp(t, x) for every t and x; fp16, bf16 and fp32 of non-NaN x take the fast path.
double ulp_fast(DType t, double x);

}  // namespace opgate::math
