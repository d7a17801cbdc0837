// Rigorous bounds on how far aclnnMoeFFN's intermediate values on the device can be from the exact
// ones (spec attention-and-ffn.md §2.7): every rounding point of the kernel's path is charged its
// unit roundoff, and a chain of exactly representable values stays exact. The reference turns these
// bounds into the per-element error budget of `y` (cases/moe_ffn/README.md, "Tolerances").
#pragma once

#include <cstdint>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/dtype.h"
#include "reference/math/shared_round.h"
#include "reference/moe_ffn/moe_ffn_activation.h"

namespace opgate::ref::moe_ffn {

// A value of the exact computation and a bound on |device value - v|.
struct Tracked {
  double v = 0;
  double e = 0;
};

// Unit roundoff of a floating dtype: 2^-11 (f16), 2^-8 (bf16), 2^-24 (f32), 2^-53 (f64).
double unit_roundoff(DType t);

// The kernel rounds `x` to dtype `t` with an error of at most `ulps` units in the last place.
// 0.5 = correctly rounded (RNE or ties away): the bound is the distance from v to the roundings of
// v - e and v + e, so an exact, representable value stays exact; otherwise e + ulps * ulp. A value
// that may overflow gets an infinite bound.
inline Tracked round_bound(Tracked x, DType t, double ulps = 0.5);  // defined below

// A correctly rounded op with the kernel's tie rule `mode` at this site (RNE for the fixpipe and
// vector Add/Mul/Cast CAST_NONE, ties away for CAST_ROUND). When every value within e of v rounds
// to the same r (always when e == 0) the device's result is determined and the value is pinned to
// it, {r, 0}: later steps use the device's value, and a changed rounding mode at this site (at a
// tie, or truncation) moves a determined value. Otherwise as round_bound (v stays, e covers
// either tie rule).
inline Tracked round_exact(Tracked x, DType t, Rounding mode);  // defined below

// The kernel's activation (AscendC FasterGelu / Silu / Gelu op sequences, or Relu) evaluated in
// dtype `t` with that dtype's coefficients, on an input within `e_h` of `h`. Returns the exact
// activate(a, h) and a bound on the device result's distance from it. Vector Exp and Div are
// assumed within 2 and 1 ulp, Add and Mul correctly rounded.
Tracked activation_bound(Activation a, double h, double e_h, DType t);

// Rounding boundaries k + 1/2 (k = -128..126) of sat8(rne(.)) within `e` of `q`: how many int8
// steps the kernel's re-quantised value can differ from sat8(rne(q)). 0 when e == 0.
int64_t requant_steps(double q, double e);

// Length of the longest fp32 rounding chain of a K-term cube accumulation: one add per 16-deep
// fractal into the accumulator plus at most 16 inside a fractal (ASSUMPTION, spec §1.4.7).
int64_t accumulation_chain(int64_t k);

// Bound on |fp32 accumulation - exact| for K terms (bias included) whose |terms| sum to `mag`.
double accumulation_bound(int64_t k, double mag);

// The largest p such that every value is an integer multiple of 2^p; kNoGrid if all are zero.
// Sums of such values stay exact in fp32 while their magnitude is below 2^(24 + p).
constexpr int kNoGrid = 100000;
int grid_exponent(const double* v, int64_t n);
// True when every partial sum of terms on grid 2^p with sum |terms| <= mag is exact in fp32.
bool fp32_exact_sum(int grid_exp, double mag);

// max_finite(t), the fp16 / bf16 / fp32 values inline.
inline double max_finite_fast(DType t) {
  math::round_detail::Format f;
  return math::round_detail::format_of(t, &f) ? f.max : max_finite(t);
}

// Inline, as round_exact: the activation bounds call it per op.
inline Tracked round_bound(Tracked x, DType t, double ulps) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (!std::isfinite(x.v) || !std::isfinite(x.e)) return {x.v, kInf};
  if (ulps == 0.5) {
    // A correctly rounded op is monotone, so the device's result lies between the roundings of the
    // ends of [v - e, v + e], under either tie rule (RNE or CAST_ROUND). The ends are widened by a
    // few double ulps so that computing them in double cannot shrink the interval.
    const double slack = x.e > 0 ? 4 * std::numeric_limits<double>::epsilon() * (std::fabs(x.v) + x.e) : 0.0;
    const double lo = x.v - x.e - slack;
    const double hi = x.v + x.e + slack;
    const double r_lo =
        std::min(math::round_fast(t, lo, Rounding::kNearestEven), math::round_fast(t, lo, Rounding::kHalfAway));
    const double r_hi =
        std::max(math::round_fast(t, hi, Rounding::kNearestEven), math::round_fast(t, hi, Rounding::kHalfAway));
    if (!std::isfinite(r_lo) || !std::isfinite(r_hi)) return {x.v, kInf};
    return {x.v, std::max(x.v - r_lo, r_hi - x.v)};
  }
  if (x.e == 0 && x.v == 0) return x;
  const double reach = std::fabs(x.v) + x.e;
  if (reach >= max_finite_fast(t)) return {x.v, kInf};
  return {x.v, x.e + ulps * math::ulp_fast(t, reach)};
}

// Inline: the hidden activation calls it once or twice per element.
inline Tracked round_exact(Tracked x, DType t, Rounding mode) {
  if (std::isfinite(x.v) && std::isfinite(x.e)) {
    // Rounding is monotone: the device's result lies between the roundings of the ends of
    // [v - e, v + e] (widened as in round_bound); when they coincide it is that value.
    const double slack = x.e > 0 ? 4 * std::numeric_limits<double>::epsilon() * (std::fabs(x.v) + x.e) : 0.0;
    const double lo = x.v - x.e - slack;
    const double hi = x.v + x.e + slack;
    const double r_lo = math::round_fast(t, lo, mode);
    const double r_hi = math::round_fast(t, hi, mode);
    if (r_lo == r_hi && std::isfinite(r_lo)) return {r_lo, 0.0};
    if (mode == Rounding::kNearestEven || mode == Rounding::kHalfAway) {
      // round_bound(x, t), reusing the ends already rounded with one of its two tie rules.
      const Rounding other = mode == Rounding::kNearestEven ? Rounding::kHalfAway : Rounding::kNearestEven;
      const double lo_end = std::min(r_lo, math::round_fast(t, lo, other));
      const double hi_end = std::max(r_hi, math::round_fast(t, hi, other));
      if (!std::isfinite(lo_end) || !std::isfinite(hi_end)) return {x.v, std::numeric_limits<double>::infinity()};
      return {x.v, std::max(x.v - lo_end, hi_end - x.v)};
    }
  }
  return round_bound(x, t);
}

}  // namespace opgate::ref::moe_ffn
