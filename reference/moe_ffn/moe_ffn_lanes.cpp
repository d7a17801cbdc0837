// Four-lane activation bounds of the fp16 high-performance path (moe_ffn_lanes.h), as two pairs:
// a pair of doubles is one register on every target (SSE2, NEON), while four-double generic
// vectors on a 128-bit baseline spill and split their 64-bit integer compares (measured: no faster
// than scalar). Each helper is the lane-wise copy of its scalar namesake; a select picks, per
// lane, the value the scalar code's branch would have returned (both sides are pure, so computing
// both changes nothing). Integer lane compares are avoided (compares are done in double).
#include "reference/moe_ffn/moe_ffn_lanes.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/vector_memory.h"
#include "reference/math/shared_round.h"

// The vectors pass by value only between always-inlined functions of this file.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace opgate::ref::moe_ffn {
namespace {

typedef double D2 __attribute__((vector_size(16)));  // two lanes: one SSE2 / NEON register
typedef int64_t L2 __attribute__((vector_size(16)));  // lane masks: -1 (true) or 0

constexpr int64_t kSign = INT64_MIN;
constexpr int64_t kAbs = INT64_MAX;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kTwo52 = 4503599627370496.0;
// fp16 (shared_round.h round_detail::format_of)
constexpr int kEmin = -14, kMant = 10;
constexpr double kMax = 65504.0;

OPGATE_INLINE L2 bits(D2 v) { return reinterpret_cast<L2>(v); }
OPGATE_INLINE D2 from_bits(L2 b) { return reinterpret_cast<D2>(b); }
OPGATE_INLINE D2 splat(double a) { return D2{a, a}; }
OPGATE_INLINE D2 select(L2 m, D2 a, D2 b) { return from_bits((bits(a) & m) | (bits(b) & ~m)); }
OPGATE_INLINE D2 vabs(D2 v) { return from_bits(bits(v) & kAbs); }
OPGATE_INLINE D2 copysign(D2 mag, D2 sign) { return from_bits((bits(mag) & kAbs) | (bits(sign) & kSign)); }
OPGATE_INLINE L2 finite(D2 v) { return vabs(v) < kInf; }  // (false for NaN)
// std::min(a, b) = b < a ? b : a and std::max(a, b) = a < b ? b : a, lane by lane.
OPGATE_INLINE D2 vmin(D2 a, D2 b) { return select(b < a, b, a); }
OPGATE_INLINE D2 vmax(D2 a, D2 b) { return select(a < b, b, a); }
// 2^k for k in double's normal range.
OPGATE_INLINE D2 pow2(L2 k) { return from_bits((k + 1023) << 52); }
// floor(log2 |v|) of a normal double, -1023 for zeros and subnormals (round_detail::exponent_of).
OPGATE_INLINE L2 exponent_of(D2 v) {
  const L2 biased = (bits(v) >> 52) & 0x7FF;
  return biased - 1023;  // biased 0 gives -1023
}
OPGATE_INLINE L2 lselect(L2 m, L2 a, L2 b) { return (a & m) | (b & ~m); }
// max(floor(log2 |v|), kEmin) - kMant, the exponent of v's fp16 quantum: kEmin below 2^kEmin
// (zeros and double subnormals included), compared in double (no 64-bit integer compares).
OPGATE_INLINE L2 quantum_exponent(D2 v) { return lselect(vabs(v) < 0x1p-14, L2{} + kEmin, exponent_of(v)) - kMant; }

// round_detail::round_integer for |s| < 2^52.
OPGATE_INLINE D2 round_integer(D2 s, Rounding r) {
  const D2 a = vabs(s);
  D2 n = (a + kTwo52) - kTwo52;
  if (r == Rounding::kHalfAway) n = select(a - n == 0.5, n + 1.0, n);
  return copysign(n, s);
}

// math::round_fast(kF16, v, r), r to nearest (even or away), for finite v. A zero or double
// subnormal v (exponent -1023) scales to below 1/2 and rounds to copysign(0, v), as the scalar
// code returns directly.
OPGATE_INLINE D2 round_fast(D2 v, Rounding r) {
  const L2 q_exp = quantum_exponent(v);
  const D2 n = round_integer(v * pow2(-q_exp), r);
  const D2 out = n * pow2(q_exp);
  return select(vabs(out) > kMax, copysign(splat(kInf), v), out);
}

// math::ulp_fast(kF16, x) for x >= 0.
OPGATE_INLINE D2 ulp_fast(D2 x) {
  const D2 a = select(x > kMax, splat(kMax), x);
  return pow2(quantum_exponent(a));
}

struct T2 {
  D2 v, e;
};

// round_exact(x, kF16, kNearestEven) for finite v and e.
OPGATE_INLINE T2 round_exact(T2 x) {
  const D2 slack = select(x.e > 0, 4 * std::numeric_limits<double>::epsilon() * (vabs(x.v) + x.e), splat(0.0));
  const D2 lo = x.v - x.e - slack;
  const D2 hi = x.v + x.e + slack;
  const D2 r_lo = round_fast(lo, Rounding::kNearestEven);
  const D2 r_hi = round_fast(hi, Rounding::kNearestEven);
  const L2 pinned = (r_lo == r_hi) & finite(r_lo);
  const D2 lo_end = vmin(r_lo, round_fast(lo, Rounding::kHalfAway));
  const D2 hi_end = vmax(r_hi, round_fast(hi, Rounding::kHalfAway));
  const D2 spread = select(finite(lo_end) & finite(hi_end), vmax(x.v - lo_end, hi_end - x.v), splat(kInf));
  return {select(pinned, r_lo, x.v), select(pinned, splat(0.0), spread)};
}

// round_bound(x, kF16, ulps) for ulps != 1/2.
OPGATE_INLINE T2 round_bound(T2 x, double ulps) {
  const D2 reach = vabs(x.v) + x.e;
  D2 e = x.e + ulps * ulp_fast(reach);
  e = select(reach >= kMax, splat(kInf), e);
  e = select((x.e == 0) & (x.v == 0), x.e, e);
  e = select(finite(x.v) & finite(x.e), e, splat(kInf));
  return {x.v, e};
}

// The fp16 coefficient of the gate's exponent, as sigmoid_gate's Eval::constant / fastgelu_coefficient
// round it.
double gate_coefficient(Activation act) {
  return math::round_fast(DType::kF16, act == Activation::kFastGelu ? -1.702 : -1.0);
}

// Values per chunk: 16 pairs, whose chains the core overlaps between the C library calls.
constexpr int64_t kChunk = 32;

// A chunk of at most kChunk values padded with zeros (ordinary lanes whose results are dropped).
struct Chunk {
  alignas(16) double h[kChunk], e[kChunk];
  int64_t count;
  Chunk(const double* hs, const double* es, int64_t first, int64_t total) : count(std::min(kChunk, total - first)) {
    for (int64_t j = 0; j < kChunk; ++j) {
      h[j] = j < count ? hs[first + j] : 0.0;
      e[j] = j < count ? es[first + j] : 0.0;
    }
  }
};

}  // namespace

bool lanes_handle(Activation act) { return act == Activation::kFastGelu || act == Activation::kSilu; }

int64_t round_exact_f16(const double* h, const double* e_h, int64_t count, double* v, double* e) {
  int64_t scalar = 0;
  for (int64_t first = 0; first < count; first += kChunk) {
    const Chunk c(h, e_h, first, count);
    for (int64_t j = 0; j < c.count; j += 2) {
      const T2 x{vec::load<D2>(c.h + j), vec::load<D2>(c.e + j)};
      const L2 ordinary = finite(x.v) & finite(x.e) & (vabs(x.v) + x.e < 32768.0);
      const T2 r = round_exact(x);
      for (int l = 0; l < 2 && j + l < c.count; ++l) {
        const int64_t at = first + j + l;
        if (ordinary[l] != 0) {
          v[at] = r.v[l];
          e[at] = r.e[l];
          continue;
        }
        const Tracked s = moe_ffn::round_exact({c.h[j + l], c.e[j + l]}, DType::kF16, Rounding::kNearestEven);
        v[at] = s.v;
        e[at] = s.e;
        ++scalar;
      }
    }
  }
  return scalar;
}

int64_t activation_bounds(Activation act, const double* h_in, const double* e_in, int64_t count, Tracked* out) {
  // sigmoid_gate: t = Eval::mul(x, {c, 0}), exp(t) + 1, x / that (moe_ffn_bound.cpp).
  const double c = gate_coefficient(act);
  int64_t scalar = 0;
  for (int64_t first = 0; first < count; first += kChunk) {
    const Chunk in(h_in, e_in, first, count);
    alignas(16) double tv[kChunk], te[kChunk], ex[kChunk], em1[kChunk], ref[kChunk];
    int64_t ordinary[kChunk];
    for (int64_t j = 0; j < kChunk; j += 2) {
      const D2 h = vec::load<D2>(in.h + j);
      const D2 e_h = vec::load<D2>(in.e + j);
      // Eval::mul(x, {c, 0}): error |x.v| * 0 + |c| * x.e + x.e * 0, in that order.
      const T2 t = round_exact({h * c, vabs(h) * 0.0 + std::fabs(c) * e_h + e_h * 0.0});
      // Lanes for the scalar code: unusual inputs, and the exp overflow guard (exp_safe = 11).
      const L2 usual = finite(h) & finite(e_h) & (vabs(h) + e_h < 32768.0) & finite(t.e) & (t.v + t.e < 11.0);
      vec::store(tv + j, t.v);
      vec::store(te + j, t.e);
      vec::store(ordinary + j, usual);
    }
    // Eval::exp(t) = round_bound({exp(v), exp(v) * expm1(e)}, 2 ulps): the C library per lane.
    for (int64_t j = 0; j < kChunk; ++j) {
      ex[j] = std::exp(tv[j]);
      em1[j] = std::expm1(te[j]);
      ref[j] = activate(act, in.h[j]);
    }
    for (int64_t j = 0; j < in.count; j += 2) {
      const D2 h = vec::load<D2>(in.h + j);
      const D2 e_h = vec::load<D2>(in.e + j);
      const D2 exv = vec::load<D2>(ex + j);
      const T2 exp_t = round_bound({exv, exv * vec::load<D2>(em1 + j)}, 2.0);
      // Eval::add(exp_t, one) = round_exact({v + 1, e + 0}).
      const T2 d = round_exact({exp_t.v + 1.0, exp_t.e + 0.0});
      // Eval::div(x, d): d.v - d.e > 0 here unless the bound is useless (then inf, as the scalar code).
      const D2 q = h / d.v;
      T2 dev = round_bound({q, (e_h + vabs(q) * d.e) / (d.v - d.e)}, 1.0);
      dev.e = select(d.v - d.e > 0, dev.e, splat(kInf));
      // activation_bound: the tracked bound, or the fallback max(|ref|, |h - ref|) + e_h.
      const D2 r = vec::load<D2>(ref + j);
      const D2 fallback = vmax(vabs(r), vabs(h - r)) + e_h;
      const D2 tracked = vabs(dev.v - r) + dev.e;
      const D2 bound = select(finite(tracked) & (tracked < fallback), tracked, fallback);
      for (int l = 0; l < 2 && j + l < in.count; ++l) {
        Tracked& o = out[first + j + l];
        if (ordinary[j + l] != 0) {
          o = {ref[j + l], bound[l]};
          continue;
        }
        o = activation_bound(act, in.h[j + l], in.e[j + l], DType::kF16);
        ++scalar;
      }
    }
  }
  return scalar;
}

}  // namespace opgate::ref::moe_ffn
