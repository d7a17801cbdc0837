// activation_bound(act, h, e, kF16) of fastgelu and silu (the high-performance path's hidden values
// that the fp16 table cannot pin) for four values at once. The bound is one long chain of
// dependent roundings per value, so one value at a time leaves the core waiting on latencies;
// independent lanes (GCC vector extensions, no ISA-specific code: pairs of doubles, one SSE2 or
// NEON register) run the same operations side by side. Every lane is the scalar formulation's
// sequence of double operations (moe_ffn_bound.cpp, shared_round.h), branches turned into selects
// of the same values, and the C library's exp and expm1 called per lane, so the results are bit
// for bit the scalar ones (moe_ffn_test.cpp compares them). Lanes outside the ordinary range
// (non-finite input or bound, |h| + e >= 2^15, an exp argument past the overflow guard) are left to
// the scalar code.
#pragma once

#include <cstdint>

#include "reference/moe_ffn/moe_ffn_activation.h"
#include "reference/moe_ffn/moe_ffn_bound.h"

namespace opgate::ref::moe_ffn {

// Whether activation_bound4 handles this activation (fastgelu, silu).
bool lanes_handle(Activation act);

// For i < 4: out[i] = activation_bound(act, h[i], e[i], DType::kF16) bit for bit, or, where
// scalar[i] is set on return, out[i] is unspecified and the caller evaluates that lane itself.
void activation_bound4(Activation act, const double* h, const double* e, Tracked* out, bool* scalar);

}  // namespace opgate::ref::moe_ffn
