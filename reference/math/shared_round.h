// Exact rounding of a double to fp16, bf16 or fp32 (and the unit in the last place there) by
// scaling with the target's quantum: the same values as core/dtype.h round_to and ulp, without
// encoding to bits and back. The references call these in per-element loops (MoeFFN's hidden
// activation and its bounds), so they are inline, and the integer rounding of the scaled value is
// done by adding and subtracting 2^52 instead of calling the C library (nearbyint, round, trunc):
// the same integer, for |scaled| < 2^52 in the default rounding mode (every scaled value here is
// below 2^25). shared_round_test.cpp compares them with round_to and ulp.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/dtype.h"

namespace opgate::math {
namespace round_detail {

struct Format {
  int emin, mant;
  double max;
};

inline bool format_of(DType t, Format* f) {
  switch (t) {
    case DType::kF16: *f = {-14, 10, 65504.0}; return true;
    case DType::kBF16: *f = {-126, 7, 0x1.FEp127}; return true;
    case DType::kF32: *f = {-126, 23, 0x1.FFFFFEp127}; return true;
    default: return false;
  }
}

// 2^k for k in double's normal exponent range.
inline double pow2(int k) {
  const uint64_t bits = static_cast<uint64_t>(k + 1023) << 52;
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// floor(log2 |v|) of a normal double; -1023 stands for zero and double subnormals (both below
// every target's smallest subnormal).
inline int exponent_of(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const int biased = static_cast<int>((bits >> 52) & 0x7FF);
  return biased == 0 ? -1023 : biased - 1023;
}

// nearbyint (ties to even), round (ties away) or trunc of s, |s| < 2^52: a + 2^52 rounds a = |s|
// to an integer (ties to even: the spacing there is 1) and subtracting 2^52 is exact; a tie that
// went down is moved away, a value that went up is moved back for trunc; the sign is s's (these
// functions keep the sign of their argument, zeros included).
inline double round_integer(double s, Rounding r) {
  constexpr double kTwo52 = 4503599627370496.0;
  const double a = std::fabs(s);
  double n = (a + kTwo52) - kTwo52;
  if (r == Rounding::kHalfAway) {
    if (a - n == 0.5) n += 1.0;
  } else if (r == Rounding::kTowardZero) {
    if (n > a) n -= 1.0;
  }
  return std::copysign(n, s);
}

}  // namespace round_detail

// round_to(t, v, r) for every t, v and r; fp16, bf16 and fp32 of finite v take the fast path.
inline double round_fast(DType t, double v, Rounding r = Rounding::kNearestEven) {
  using namespace round_detail;
  Format f;
  if (!format_of(t, &f) || !std::isfinite(v)) return round_to(t, v, r);
  const int e = exponent_of(v);
  if (e == -1023) return std::copysign(0.0, v);  // below half the smallest subnormal: every mode gives 0
  const int q_exp = (e > f.emin ? e : f.emin) - f.mant;
  const double n = round_integer(v * pow2(-q_exp), r);  // |v * 2^-q_exp| < 2^(mant + 1)
  const double out = n * pow2(q_exp);
  if (std::fabs(out) > f.max) return std::copysign(r == Rounding::kTowardZero ? f.max : INFINITY, v);
  return out;
}

// ulp(t, x) for every t and x; fp16, bf16 and fp32 of non-NaN x take the fast path.
inline double ulp_fast(DType t, double x) {
  using namespace round_detail;
  Format f;
  if (!format_of(t, &f) || std::isnan(x)) return ulp(t, x);
  double a = std::fabs(x);
  if (a > f.max) a = f.max;  // fmin(|x|, max) for non-NaN x
  const int e = a == 0.0 ? f.emin : exponent_of(a);
  return pow2((e > f.emin ? e : f.emin) - f.mant);
}

}  // namespace opgate::math
