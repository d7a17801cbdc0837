// Error bounds of aclnnMoeFFN's device numerics (spec attention-and-ffn.md §2.4, §2.7): forward
// error propagation through the kernel's rounding points, with the AscendC activation op sequences
// (gelu_impl.h FastGeluCalcSimplified / GeluCalcSimplifiedAvoid, silu_common_impl.h).
#include "reference/moe_ffn/moe_ffn_bound.h"
#include "reference/math/shared_round.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace opgate::ref::moe_ffn {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kDivUlps = 1.0;    // ASSUMPTION: vector Div within 1 ulp
constexpr double kExpUlps = 2.0;    // ASSUMPTION: vector Exp within 2 ulps

// Forward error propagation of one op sequence evaluated in dtype `t`.
struct Eval {
  DType t;
  Tracked one{1.0, 0.0};  // exact in every dtype

  Tracked constant(double k) const { return {math::round_fast(t, k), 0.0}; }
  // Vector Muls / Adds round to nearest even; exact operands give the device's value exactly.
  Tracked mul(Tracked a, Tracked b) const {
    return round_exact({a.v * b.v, std::fabs(a.v) * b.e + std::fabs(b.v) * a.e + a.e * b.e}, t,
                       Rounding::kNearestEven);
  }
  Tracked add(Tracked a, Tracked b) const { return round_exact({a.v + b.v, a.e + b.e}, t, Rounding::kNearestEven); }
  // Denominators here are 1 + exp(.) >= 1, so b.v - b.e > 0 unless b's bound is useless.
  Tracked div(Tracked a, Tracked b) const {
    const double q = a.v / b.v;
    if (!(b.v - b.e > 0)) return {q, kInf};
    return round_bound({q, (a.e + std::fabs(q) * b.e) / (b.v - b.e)}, t, kDivUlps);
  }
  Tracked exp(Tracked a) const {
    const double v = std::exp(a.v);
    return round_bound({v, v * std::expm1(a.e)}, t, kExpUlps);
  }
};

// -1.702 rounded to t, once per dtype (the per-element bounds would otherwise round it each time).
Tracked fastgelu_coefficient(DType t) {
  static const double f16 = math::round_fast(DType::kF16, -1.702);
  static const double bf16 = math::round_fast(DType::kBF16, -1.702);
  static const double f32 = math::round_fast(DType::kF32, -1.702);
  switch (t) {
    case DType::kF16: return {f16, 0.0};
    case DType::kBF16: return {bf16, 0.0};
    case DType::kF32: return {f32, 0.0};
    default: return {math::round_fast(t, -1.702), 0.0};
  }
}

// x / (1 + exp(c x)) with c = -1.702 (FasterGelu) or -1 (Silu): Muls, Exp, Adds, Div. Where exp may
// overflow to inf the device result is x / inf = 0 or x / (1 + E) with E at least exp(t_min), so
// it lies within |x| / (1 + E_min) of 0 (plus the rounding of such a tiny quotient).
Tracked sigmoid_gate(const Eval& ev, Tracked x, Tracked c) {
  const Tracked t = ev.mul(x, c);
  // Below the dtype's exp_safe the test below is false without calling exp (exp(11) < 59875 and
  // exp(88) < 1.7e38: under fp16's and bf16/fp32's largest finite values over 1 + 4u).
  const double exp_safe = ev.t == DType::kF16 ? 11.0 : ev.t == DType::kBF16 || ev.t == DType::kF32 ? 88.0 : -kInf;
  if (!(t.v + t.e < exp_safe) && std::exp(t.v + t.e) * (1 + 4 * unit_roundoff(ev.t)) >= max_finite(ev.t)) {
    const double e_min = std::exp(t.v - t.e) * (1 - 4 * unit_roundoff(ev.t));
    return {0.0, (std::fabs(x.v) + x.e) / (1 + e_min) + math::ulp_fast(ev.t, 0.0)};
  }
  const Tracked d = ev.add(ev.exp(t), ev.one);
  return ev.div(x, d);
}

// GeluCalcSimplifiedAvoid: y = 1.5957691 (x + 0.044715 x^3); x / (exp(-|y|) + 1) * exp(min(y, 0)).
// Where x^3 may overflow, y = +-inf: the device returns x exactly (x > 0) or 0 (x < 0).
Tracked gelu_tanh(const Eval& ev, Tracked x) {
  // Unless the device's x itself is finite: x = -Inf gives (-Inf / 1) * 0 = NaN.
  if (!(std::fabs(x.v) + x.e < max_finite(ev.t))) return {x.v, kInf};
  if (std::pow(std::fabs(x.v) + x.e, 3) >= max_finite(ev.t)) return x.v > 0 ? x : Tracked{0.0, 0.0};
  const Tracked x2 = ev.mul(x, x);
  const Tracked x3 = ev.mul(x, x2);
  const Tracked inner = ev.add(x, ev.mul(x3, ev.constant(0.044715)));
  const Tracked y = ev.mul(inner, ev.constant(1.5957691216057308));
  const Tracked upper = ev.exp({std::min(y.v, 0.0), y.e});
  const Tracked lower = ev.add(ev.exp({-std::fabs(y.v), y.e}), ev.one);
  return ev.mul(ev.div(x, lower), upper);
}

}  // namespace

// 2^-p (p <= 53, exact); a division by a power of two instead of ldexp in per-element bounds.
double unit_roundoff(DType t) { return 1.0 / static_cast<double>(uint64_t{1} << mantissa_digits(t)); }

Tracked activation_bound(Activation a, double h, double e_h, DType t) {
  const double ref = activate(a, h);
  if (a == Activation::kRelu) return {ref, e_h};
  const Eval ev{t};
  Tracked dev;
  switch (a) {
    case Activation::kFastGelu: dev = sigmoid_gate(ev, {h, e_h}, fastgelu_coefficient(t)); break;
    case Activation::kSilu: dev = sigmoid_gate(ev, {h, e_h}, ev.constant(-1.0)); break;
    case Activation::kGelu: dev = gelu_tanh(ev, {h, e_h}); break;
    default: return {ref, kInf};
  }
  // Every op sequence returns x * g with g in [0, 1] after rounding, so the device result lies
  // between 0 and its input whatever overflows on the way (exp -> inf gives exactly 0).
  const double fallback = std::max(std::fabs(ref), std::fabs(h - ref)) + e_h;
  const double tracked = std::fabs(dev.v - ref) + dev.e;
  return {ref, std::isfinite(tracked) && tracked < fallback ? tracked : fallback};
}

int64_t requant_steps(double q, double e) {
  if (!(e > 0)) return 0;
  if (!std::isfinite(e) || !std::isfinite(q)) return 255;
  const double lo = std::max(std::ceil(q - e - 0.5), -128.0);
  const double hi = std::min(std::floor(q + e - 0.5), 126.0);
  return hi >= lo ? static_cast<int64_t>(hi - lo) + 1 : 0;
}

int64_t accumulation_chain(int64_t k) { return (k + 15) / 16 + 16; }

double accumulation_bound(int64_t k, double mag) {
  constexpr double kF32Unit = 0x1p-24;  // unit_roundoff(kF32), without the per-element lookup
  const double nu = static_cast<double>(accumulation_chain(k)) * kF32Unit;
  return nu / (1.0 - nu) * mag;
}

int grid_exponent(const double* v, int64_t n) {
  int best = kNoGrid;
  for (int64_t i = 0; i < n; ++i) {
    if (v[i] == 0.0 || !std::isfinite(v[i])) continue;
    // v = m * 2^(biased - 1075) (normal) or frac * 2^-1074 (subnormal): the lowest set bit of m
    // is the grid (the same as frexp's mantissa scaled to an integer, without the library calls).
    uint64_t b;
    std::memcpy(&b, &v[i], sizeof b);
    const int biased = static_cast<int>((b >> 52) & 0x7FF);
    const uint64_t frac = b & ((uint64_t{1} << 52) - 1);
    const uint64_t m = biased == 0 ? frac : frac | (uint64_t{1} << 52);
    best = std::min(best, (biased == 0 ? -1074 : biased - 1075) + __builtin_ctzll(m));
  }
  return best;
}

bool fp32_exact_sum(int grid_exp, double mag) {
  if (grid_exp == kNoGrid) return true;
  if (grid_exp < -149) return false;
  // 2^(24 + p) built from its bits (p >= -149 keeps it normal): ldexp's value without the call.
  const int e = 24 + grid_exp;
  if (e > 1023) return mag <= std::numeric_limits<double>::infinity();
  const uint64_t bits = static_cast<uint64_t>(e + 1023) << 52;
  double limit;
  std::memcpy(&limit, &bits, sizeof limit);
  return mag <= limit;
}

}  // namespace opgate::ref::moe_ffn
