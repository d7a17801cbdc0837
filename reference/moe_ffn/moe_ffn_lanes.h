// activation_bound(act, h, e, kF16) of fastgelu and silu (the high-performance path's hidden values
// that the fp16 table cannot pin), and the fp16 rounding of the hidden values before it, for whole
// rows. Each bound is one long chain of dependent roundings, so one value at a time leaves the
// core waiting on latencies; independent lanes (GCC vector extensions, no ISA-specific code: pairs
// of doubles, one SSE2 or NEON register) run the same operations side by side, in chunks whose
// stages hold no call (the C library's exp and expm1 run per lane between them, so the out-of-order
// core overlaps the chains of a whole chunk). Every lane is the scalar formulation's sequence of
// double operations (moe_ffn_bound.cpp, moe_ffn_bound.h, shared_round.h), branches turned into
// selects of the same values, so the results are bit for bit the scalar ones (moe_ffn_test.cpp
// compares them). Values outside the ordinary range (non-finite value or bound, |h| + e >= 2^15,
// an exp argument past the overflow guard) take the scalar code.
#pragma once

#include <cstdint>

#include "reference/moe_ffn/moe_ffn_activation.h"
#include "reference/moe_ffn/moe_ffn_bound.h"

namespace opgate::ref::moe_ffn {

// Whether activation_bounds handles this activation (fastgelu, silu).
bool lanes_handle(Activation act);

// For j < count: {v[j], e[j]} = round_exact({h[j], e_h[j]}, kF16, kNearestEven) bit for bit (v, e
// may be h, e_h). Returns how many values took the scalar code.
int64_t round_exact_f16(const double* h, const double* e_h, int64_t count, double* v, double* e);

// For j < count: out[j] = activation_bound(act, h[j], e[j], DType::kF16) bit for bit (act: one that
// lanes_handle). Returns how many values took the scalar code.
int64_t activation_bounds(Activation act, const double* h, const double* e, int64_t count, Tracked* out);

}  // namespace opgate::ref::moe_ffn
