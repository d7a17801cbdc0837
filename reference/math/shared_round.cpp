// r = round(v / q) * q with q = 2^(max(e, emin) - mantissa bits), e = floor(log2 |v|): v / q and
// the product are exact (powers of two, far from double's range limits), the integer rounding is
// the mode's (ties to even, ties away, toward zero), and a result beyond the largest finite value
// is the overflow of the mode (inf to nearest, the largest finite toward zero).
#include "reference/math/shared_round.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace opgate::math {
namespace {

struct Format {
  int emin, mant;
  double max;
};

bool format_of(DType t, Format* f) {
  switch (t) {
    case DType::kF16: *f = {-14, 10, 65504.0}; return true;
    case DType::kBF16: *f = {-126, 7, 0x1.FEp127}; return true;
    case DType::kF32: *f = {-126, 23, 0x1.FFFFFEp127}; return true;
    default: return false;
  }
}

// 2^k for k in double's normal exponent range.
double pow2(int k) {
  const uint64_t bits = static_cast<uint64_t>(k + 1023) << 52;
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// floor(log2 |v|) of a normal double; -1023 stands for zero and double subnormals (both below
// every target's smallest subnormal).
int exponent_of(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const int biased = static_cast<int>((bits >> 52) & 0x7FF);
  return biased == 0 ? -1023 : biased - 1023;
}

}  // namespace

double round_fast(DType t, double v, Rounding r) {
  Format f;
  if (!format_of(t, &f) || !std::isfinite(v)) return round_to(t, v, r);
  const int e = exponent_of(v);
  if (e == -1023) return std::copysign(0.0, v);  // below half the smallest subnormal: every mode gives 0
  const int q_exp = (e > f.emin ? e : f.emin) - f.mant;
  const double scaled = v * pow2(-q_exp);
  double n = 0;
  switch (r) {
    case Rounding::kNearestEven: n = std::nearbyint(scaled); break;  // the default mode: ties to even
    case Rounding::kHalfAway: n = std::round(scaled); break;
    case Rounding::kTowardZero: n = std::trunc(scaled); break;
  }
  const double out = n * pow2(q_exp);
  if (std::fabs(out) > f.max) return std::copysign(r == Rounding::kTowardZero ? f.max : INFINITY, v);
  return out;
}

double ulp_fast(DType t, double x) {
  Format f;
  if (!format_of(t, &f) || std::isnan(x)) return ulp(t, x);
  const double a = std::fmin(std::fabs(x), f.max);
  const int e = a == 0.0 ? f.emin : exponent_of(a);
  return pow2((e > f.emin ? e : f.emin) - f.mant);
}

}  // namespace opgate::math
