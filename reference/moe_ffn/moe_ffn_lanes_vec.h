// The lanes of moe_ffn_lanes.h, included only by the ISA files (reference/moe_ffn/<arch>/
// moe_ffn_lanes_<isa>.cpp), each of which defines OPGATE_LANES_BYTES (its vector width: 16 for
// SSE2 and NEON, 32 for AVX2, 64 for AVX-512) and OPGATE_LANES_TARGET (the target attribute of its
// entry points, empty for a baseline ISA) first, then names its table with OPGATE_LANES_PATH. Each helper is the
// lane-wise copy of its scalar namesake; a select picks, per lane, the value the scalar code's
// branch would have returned (both sides are pure, so computing both changes nothing). Integer
// lane compares are avoided (compares are done in double). Everything has internal linkage or is
// always inlined, so no path's code is shared with another's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/vector_memory.h"
#include "reference/math/shared_round.h"
#include "reference/moe_ffn/moe_ffn_lanes.h"
#include "reference/moe_ffn/moe_ffn_lanes_paths.h"

// The vectors pass by value only between always-inlined functions of one ISA file.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace opgate::ref::moe_ffn {
namespace {

typedef double D __attribute__((vector_size(OPGATE_LANES_BYTES)));
typedef int64_t L __attribute__((vector_size(OPGATE_LANES_BYTES)));  // lane masks: -1 (true) or 0
constexpr int kLanes = OPGATE_LANES_BYTES / 8;

constexpr int64_t kSign = INT64_MIN;
constexpr int64_t kAbs = INT64_MAX;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kTwo52 = 4503599627370496.0;
// fp16 (shared_round.h round_detail::format_of)
constexpr int kEmin = -14, kMant = 10;
constexpr double kMax = 65504.0;

OPGATE_INLINE L bits(D v) { return reinterpret_cast<L>(v); }
OPGATE_INLINE D from_bits(L b) { return reinterpret_cast<D>(b); }
OPGATE_INLINE D splat(double a) { return D{} + a; }
OPGATE_INLINE D select(L m, D a, D b) { return from_bits((bits(a) & m) | (bits(b) & ~m)); }
OPGATE_INLINE D vabs(D v) { return from_bits(bits(v) & kAbs); }
OPGATE_INLINE D copysign(D mag, D sign) { return from_bits((bits(mag) & kAbs) | (bits(sign) & kSign)); }
OPGATE_INLINE L finite(D v) { return vabs(v) < kInf; }  // (false for NaN)
// std::min(a, b) = b < a ? b : a and std::max(a, b) = a < b ? b : a, lane by lane.
OPGATE_INLINE D vmin(D a, D b) { return select(b < a, b, a); }
OPGATE_INLINE D vmax(D a, D b) { return select(a < b, b, a); }
// 2^k for k in double's normal range.
OPGATE_INLINE D pow2(L k) { return from_bits((k + 1023) << 52); }
// floor(log2 |v|) of a normal double, -1023 for zeros and subnormals (round_detail::exponent_of).
OPGATE_INLINE L exponent_of(D v) {
  const L biased = (bits(v) >> 52) & 0x7FF;
  return biased - 1023;  // biased 0 gives -1023
}
OPGATE_INLINE L lselect(L m, L a, L b) { return (a & m) | (b & ~m); }
// max(floor(log2 |v|), kEmin) - kMant, the exponent of v's fp16 quantum: kEmin below 2^kEmin
// (zeros and double subnormals included), compared in double (no 64-bit integer compares).
OPGATE_INLINE L quantum_exponent(D v) { return lselect(vabs(v) < 0x1p-14, L{} + kEmin, exponent_of(v)) - kMant; }

// round_detail::round_integer for |s| < 2^52.
OPGATE_INLINE D round_integer(D s, Rounding r) {
  const D a = vabs(s);
  D n = (a + kTwo52) - kTwo52;
  if (r == Rounding::kHalfAway) n = select(a - n == 0.5, n + 1.0, n);
  return copysign(n, s);
}

// math::round_fast(kF16, v, r), r to nearest (even or away), for finite v. A zero or double
// subnormal v (exponent -1023) scales to below 1/2 and rounds to copysign(0, v), as the scalar
// code returns directly.
OPGATE_INLINE D round_fast(D v, Rounding r) {
  const L q_exp = quantum_exponent(v);
  const D n = round_integer(v * pow2(-q_exp), r);
  const D out = n * pow2(q_exp);
  return select(vabs(out) > kMax, copysign(splat(kInf), v), out);
}

// math::ulp_fast(kF16, x) for x >= 0.
OPGATE_INLINE D ulp_fast(D x) {
  const D a = select(x > kMax, splat(kMax), x);
  return pow2(quantum_exponent(a));
}

struct T {
  D v, e;
};

// round_exact(x, kF16, kNearestEven) for finite v and e.
OPGATE_INLINE T round_exact(T x) {
  const D slack = select(x.e > 0, 4 * std::numeric_limits<double>::epsilon() * (vabs(x.v) + x.e), splat(0.0));
  const D lo = x.v - x.e - slack;
  const D hi = x.v + x.e + slack;
  const D r_lo = round_fast(lo, Rounding::kNearestEven);
  const D r_hi = round_fast(hi, Rounding::kNearestEven);
  const L pinned = (r_lo == r_hi) & finite(r_lo);
  const D lo_end = vmin(r_lo, round_fast(lo, Rounding::kHalfAway));
  const D hi_end = vmax(r_hi, round_fast(hi, Rounding::kHalfAway));
  const D spread = select(finite(lo_end) & finite(hi_end), vmax(x.v - lo_end, hi_end - x.v), splat(kInf));
  return {select(pinned, r_lo, x.v), select(pinned, splat(0.0), spread)};
}

// round_bound(x, kF16, ulps) for ulps != 1/2.
OPGATE_INLINE T round_bound(T x, double ulps) {
  const D reach = vabs(x.v) + x.e;
  D e = x.e + ulps * ulp_fast(reach);
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

OPGATE_INLINE int64_t round_exact_f16_body(const double* h, const double* e_h, int64_t count, double* v, double* e) {
  int64_t scalar = 0;
  for (int64_t first = 0; first < count; first += kChunk) {
    const Chunk c(h, e_h, first, count);
    for (int64_t j = 0; j < c.count; j += kLanes) {
      const T x{vec::load<D>(c.h + j), vec::load<D>(c.e + j)};
      const L ordinary = finite(x.v) & finite(x.e) & (vabs(x.v) + x.e < 32768.0);
      const T r = round_exact(x);
      for (int l = 0; l < kLanes && j + l < c.count; ++l) {
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

OPGATE_INLINE int64_t activation_bounds_body(Activation act, const double* h_in, const double* e_in, int64_t count,
                                             Tracked* out) {
  // sigmoid_gate: t = Eval::mul(x, {c, 0}), exp(t) + 1, x / that (moe_ffn_bound.cpp).
  const double c = gate_coefficient(act);
  int64_t scalar = 0;
  for (int64_t first = 0; first < count; first += kChunk) {
    const Chunk in(h_in, e_in, first, count);
    alignas(16) double tv[kChunk], te[kChunk], ex[kChunk], em1[kChunk], ref[kChunk];
    int64_t ordinary[kChunk];
    for (int64_t j = 0; j < kChunk; j += kLanes) {
      const D h = vec::load<D>(in.h + j);
      const D e_h = vec::load<D>(in.e + j);
      // Eval::mul(x, {c, 0}): error |x.v| * 0 + |c| * x.e + x.e * 0, in that order.
      const T t = round_exact({h * c, vabs(h) * 0.0 + std::fabs(c) * e_h + e_h * 0.0});
      // Lanes for the scalar code: unusual inputs, and the exp overflow guard (exp_safe = 11).
      const L usual = finite(h) & finite(e_h) & (vabs(h) + e_h < 32768.0) & finite(t.e) & (t.v + t.e < 11.0);
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
    for (int64_t j = 0; j < in.count; j += kLanes) {
      const D h = vec::load<D>(in.h + j);
      const D e_h = vec::load<D>(in.e + j);
      const D exv = vec::load<D>(ex + j);
      const T exp_t = round_bound({exv, exv * vec::load<D>(em1 + j)}, 2.0);
      // Eval::add(exp_t, one) = round_exact({v + 1, e + 0}).
      const T d = round_exact({exp_t.v + 1.0, exp_t.e + 0.0});
      // Eval::div(x, d): d.v - d.e > 0 here unless the bound is useless (then inf, as the scalar code).
      const D q = h / d.v;
      T dev = round_bound({q, (e_h + vabs(q) * d.e) / (d.v - d.e)}, 1.0);
      dev.e = select(d.v - d.e > 0, dev.e, splat(kInf));
      // activation_bound: the tracked bound, or the fallback max(|ref|, |h - ref|) + e_h.
      const D r = vec::load<D>(ref + j);
      const D fallback = vmax(vabs(r), vabs(h - r)) + e_h;
      const D tracked = vabs(dev.v - r) + dev.e;
      const D bound = select(finite(tracked) & (tracked < fallback), tracked, fallback);
      for (int l = 0; l < kLanes && j + l < in.count; ++l) {
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

// The path's entry points: the target attribute only here, where no vector crosses a call (the
// helpers above are inlined into them and compiled for the path's target; clang rejects a call
// that passes a vector between functions of different targets).
OPGATE_LANES_TARGET int64_t round_exact_f16_lanes(const double* h, const double* e_h, int64_t count, double* v,
                                                  double* e) {
  return round_exact_f16_body(h, e_h, count, v, e);
}

OPGATE_LANES_TARGET int64_t activation_bounds_lanes(Activation act, const double* h, const double* e, int64_t count,
                                                    Tracked* out) {
  return activation_bounds_body(act, h, e, count, out);
}

}  // namespace
}  // namespace opgate::ref::moe_ffn

// The table lane_paths::<suffix> of the ISA file that includes this (outside any namespace).
#define OPGATE_LANES_PATH(suffix)                                                          \
  namespace opgate::ref::moe_ffn {                                                         \
  const LaneKernels lane_paths::suffix = {round_exact_f16_lanes, activation_bounds_lanes}; \
  }
