// Comparator, standards, metrics and vacuity check (DESIGN.md §6; style-and-layout.md B7).
#include "core/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "core/error_balance.h"
#include "core/parallel.h"

namespace opgate {
namespace {

// Per-dtype constants of the published Ascend standards (anchors.md A6).
struct MixedConst {
  double rtol, atol, floor;
};
MixedConst mixed_const(DType t) {
  switch (t) {
    case DType::kF16: return {0x1p-9, 0x1p-9, 0.1};
    case DType::kBF16: return {0x1p-6, 0x1p-6, 1.0};
    default: return {0x1p-10, 0x1p-16, 0.01};
  }
}
double mere_threshold(DType t) {
  switch (t) {
    case DType::kF16: return 0x1p-10;
    case DType::kBF16: return 0x1p-7;
    default: return 0x1p-13;
  }
}
double dual_rtol(DType t) {
  switch (t) {
    case DType::kF16: return 1e-3;
    case DType::kBF16: return 4e-3;
    default: return 1e-4;
  }
}
constexpr double kMixedRatio = 0.99;
constexpr double kDualFraction = 0.001;
constexpr double kMereEps = 1e-7;
const double kPermilleRate = DualPermille{}.rate;  // the old standard's error rate, every dtype
constexpr size_t kMaxPoints = 10;

bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// round_to and ulp from the double's bits where the value is a normal number of f32, f16 or bf16
// (the bulk of every floating output); zeros, subnormals, overflow, NaN and the integer dtypes take
// the general functions, which these equal everywhere.
struct NormalRange {
  int frac_bits = 0, emin = 0, emax = -1;  // emax < emin: no fast path
};
NormalRange normal_range(DType T) {
  switch (T) {
    case DType::kF32: return {23, -126, 127};
    case DType::kF16: return {10, -14, 15};
    case DType::kBF16: return {7, -126, 127};
    default: return {};
  }
}
int exponent_of(uint64_t bits) { return static_cast<int>((bits >> 52) & 0x7FF) - 1023; }

// Called per element of every output: always inlined.
#define OPGATE_HOT inline __attribute__((always_inline))

OPGATE_HOT double fast_round(DType T, double v, Rounding r) {
  const NormalRange f = normal_range(T);
  const uint64_t b = double_bits(v);
  if (exponent_of(b) >= f.emin && exponent_of(b) <= f.emax) {
    // Round the magnitude's bits below the format's last fraction bit; a carry moves the exponent.
    const uint64_t unit = uint64_t{1} << (52 - f.frac_bits);
    const uint64_t rest = b & (unit - 1);
    const uint64_t half = unit >> 1;
    uint64_t out = b - rest;
    // Bitwise, not short-circuit: the operands are random bits, so a branch would mispredict.
    const bool tie_up = (r == Rounding::kHalfAway) | ((out & unit) != 0);
    out += unit * static_cast<uint64_t>((r != Rounding::kTowardZero) & ((rest > half) | ((rest == half) & tie_up)));
    if (exponent_of(out) <= f.emax) return double_from_bits(out);  // else it overflows: the general path
  }
  return round_to(T, v, r);
}

OPGATE_HOT double fast_ulp(DType T, double x) {
  const NormalRange f = normal_range(T);
  const int e = exponent_of(double_bits(x));
  if (e >= f.emin && e <= f.emax) return double_from_bits(static_cast<uint64_t>(e - f.frac_bits + 1023) << 52);
  return ulp(T, x);
}

// The element's allowance under `check` (the largest |got - exp| that is fine for this element).
OPGATE_HOT double element_allowance(const OutputCheck& check, double e, double mag) {
  const Tolerance& t = check.tol;
  const DType T = check.device_dtype;
  switch (check.kind) {
    case CheckKind::kExact: return 0;
    case CheckKind::kQuantized: return static_cast<double>(check.max_steps);
    case CheckKind::kUndefined: return std::numeric_limits<double>::infinity();
    case CheckKind::kTolerance: break;
  }
  switch (t.standard) {
    case Standard::kBound: {
      const double acc = t.c * t.u_acc * mag;
      // The final rounding happens at the accumulated value, which may sit one binade higher.
      return acc + t.out_ulps * fast_ulp(T, std::fabs(e) + acc);
    }
    case Standard::kAscendMixed: {
      const MixedConst m = mixed_const(T);
      return m.atol + m.rtol * std::fabs(e);
    }
    // MARE < 10 T is strict; the largest double below the limit makes the shared "<=" test strict.
    case Standard::kMereMare: return std::nextafter(10 * mere_threshold(T) * (std::fabs(e) + kMereEps), 0.0);
    case Standard::kDualThousandth: return dual_rtol(T) * std::max(1.0, std::fabs(e));
    case Standard::kAllclose: return t.atol + t.rtol * std::fabs(e);
    case Standard::kAscendV03:
      if (is_integer(T)) return 1.0;  // a quantised result: at most one step
      return v03_limits(check.op_class, T, check.accumulations).err * std::max(std::fabs(e), 1.0);
    case Standard::kAscendDualPermille: return dual_permille_for(T).rate * std::max(std::fabs(e), 1.0);
  }
  return 0;
}

// How many elements may fail their elementwise criterion before the output fails.
int64_t allowed_bad(const OutputCheck& check, int64_t compared) {
  if (check.kind != CheckKind::kTolerance) return 0;
  double frac = 0;
  switch (check.tol.standard) {
    case Standard::kBound:
    case Standard::kAllclose: frac = check.tol.max_bad_fraction; break;
    case Standard::kAscendMixed: frac = 1 - kMixedRatio; break;
    case Standard::kDualThousandth: frac = kDualFraction; break;
    case Standard::kMereMare: frac = 0; break;  // MARE < 10 T rejects any single element
    case Standard::kAscendV03: frac = 0; break;
    case Standard::kAscendDualPermille: frac = dual_permille_for(check.device_dtype).share; break;
  }
  return static_cast<int64_t>(std::floor(frac * static_cast<double>(compared) + 1e-9));
}

// Ascend's standards judge an integer output against the golden rounded (and saturated) to it, as
// ATB's quantised tests do; floating outputs against the raw reference.
bool ascend_gate(const OutputCheck& check) {
  return check.kind == CheckKind::kTolerance &&
         (check.tol.standard == Standard::kAscendV03 || check.tol.standard == Standard::kAscendDualPermille);
}

// The value an element's error is measured from: the raw reference under a floating tolerance, the
// reference rounded to the device dtype otherwise.
OPGATE_HOT double centre(const OutputCheck& check, double e, double er) {
  if (check.kind != CheckKind::kTolerance) return er;
  return ascend_gate(check) && is_integer(check.device_dtype) ? er : e;
}

bool cared(const Tensor& care, int64_t i) { return !care.defined() || care.get(i) != 0; }

// A bound whose output term is one final rounding (half an ulp) in the check's mode: the kernel
// returns round(x) for some x within acc = c * u_acc * magnitude of the reference.
OPGATE_HOT bool one_rounding_bound(const OutputCheck& check) {
  return check.kind == CheckKind::kTolerance && check.tol.standard == Standard::kBound && check.tol.out_ulps == 0.5;
}

// Does `e` sit exactly on a rounding boundary of T under `r`? Midway between two neighbours for the
// nearest modes (a tie), on a representable value for truncation.
bool on_boundary(DType T, double e, Rounding r) {
  const double toward_zero = fast_round(T, e, Rounding::kTowardZero);
  if (r == Rounding::kTowardZero) return toward_zero == e;
  if (toward_zero == e) return false;
  const double step = is_floating(T) ? fast_ulp(T, toward_zero) : 1.0;
  return std::fabs(e) - std::fabs(toward_zero) == 0.5 * step;
}

// The elementwise criterion of one element (the aggregate criteria of some standards come on top):
// `g` against the raw reference `e`, rounded to the device dtype as `er`. The error is infinite
// when exactly one side is not finite.
struct Judgement {
  bool ok;
  double abs_err;
  bool determined = false;  // the check accepts a single device value here
  bool interval = false;    // a one-rounding bound: g must lie in [lo, hi]
  double lo = 0, hi = 0;
};
OPGATE_HOT Judgement judge(const OutputCheck& check, double e, double er, double g, double allowed, double mag) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const bool exact = check.kind == CheckKind::kExact;
  // An expected NaN is matched by a NaN only, an expected Inf by the same Inf only, under every
  // check: an integer dtype's saturation or NaN-to-0 conversion does not make them a number.
  if (!std::isfinite(e)) {
    const bool ok = std::isnan(e) ? std::isnan(g) : g == e;
    return {ok, ok ? 0.0 : kInf, exact};
  }
  if (std::isnan(g)) return {false, kInf, exact};
  if (one_rounding_bound(check)) {
    const double acc = check.tol.c * check.tol.u_acc * mag;
    if (std::isfinite(acc)) {
      // Rounding is monotone, so round(x) for every x in [e - acc, e + acc] lies between the
      // rounded ends; where they coincide (signed zeros compare equal: either sign may come out of
      // an x near 0) only that value is right. Overflow rounds to inf, saturation to the range.
      const double lo = fast_round(check.device_dtype, e - acc, check.rounding);
      const double hi = fast_round(check.device_dtype, e + acc, check.rounding);
      return {lo <= g && g <= hi, std::isfinite(g) ? std::fabs(g - e) : kInf, lo == hi, true, lo, hi};
    }
  }
  if (!std::isfinite(er)) {  // a finite reference beyond the dtype's range
    const bool ok = same_value(er, g);
    return {ok, ok ? 0.0 : kInf, exact};
  }
  if (!std::isfinite(g)) return {false, kInf, exact};
  const double abs_err = std::fabs(g - centre(check, e, er));
  return {exact ? same_value(er, g) : abs_err <= allowed, abs_err, exact};
}

bool element_ok(const OutputCheck& check, const Tensor& expected, const Tensor& magnitude, int64_t i, double g) {
  const double e = expected.get(i);
  const double er = is_integer(expected.dtype()) ? e : round_to(check.device_dtype, e, check.rounding);
  const double mag = magnitude.defined() ? magnitude.get(i) : 0.0;
  return judge(check, e, er, g, element_allowance(check, e, mag), mag).ok;
}

// Standards whose verdict is the count of elementwise failures alone, so a sparse change of the
// output can be judged from the changed elements.
bool elementwise_only(const OutputCheck& check) {
  return check.kind != CheckKind::kTolerance || check.tol.standard == Standard::kBound ||
         check.tol.standard == Standard::kAllclose;
}

// A point's rank among the worst: failing before passing, then by its share of the allowance. A
// pair, not share + 1e300, which would make every failing share of order 1 the same number.
using WorstRank = std::pair<bool, double>;

int ulp_bucket(double ulps) {
  if (ulps == 0) return 0;
  if (ulps <= 1) return 1;
  if (ulps <= 2) return 2;
  if (ulps <= 4) return 3;
  if (ulps <= 8) return 4;
  if (ulps <= 16) return 5;
  if (ulps <= 64) return 6;
  return 7;
}

}  // namespace

double allowance_at(const OutputCheck& check, double expected, double magnitude) {
  return element_allowance(check, expected, magnitude);
}

const char* check_kind_name(CheckKind k) {
  switch (k) {
    case CheckKind::kExact: return "exact";
    case CheckKind::kTolerance: return "tolerance";
    case CheckKind::kQuantized: return "quantized";
    case CheckKind::kUndefined: return "undefined";
  }
  return "?";
}

const char* standard_name(Standard s) {
  switch (s) {
    case Standard::kBound: return "bound";
    case Standard::kAscendMixed: return "ascend-mixed";
    case Standard::kMereMare: return "mere-mare";
    case Standard::kDualThousandth: return "dual-thousandth";
    case Standard::kAllclose: return "allclose";
    case Standard::kAscendV03: return "ascend-v0.3";
    case Standard::kAscendDualPermille: return "ascend-dual-permille";
  }
  return "?";
}

std::optional<Standard> parse_standard(const std::string& name) {
  for (Standard s : {Standard::kBound, Standard::kAscendMixed, Standard::kMereMare,
                     Standard::kDualThousandth, Standard::kAllclose, Standard::kAscendV03,
                     Standard::kAscendDualPermille}) {
    if (name == standard_name(s)) return s;
  }
  return std::nullopt;
}

namespace {

// compare_output's running sums over the finite compared elements.
struct Sums {
  double sum_rel = 0, sum_sq = 0, dot = 0, norm_e = 0, norm_g = 0;
  int64_t n_pos = 0, n_neg = 0, n_finite = 0;
  double worst_abs_er = 0;  // rounded expected at the element with the largest abs error
};
using WorstPoints = std::vector<std::pair<WorstRank, ComparePoint>>;

// One element of an output, as compare_output sees it.
struct Element {
  int64_t i;
  double e, er, g, ref, abs_err, allowed;
};

// The metrics of a finite element: its errors, its share of the allowance, its ULP bucket, its
// side of the reference and, for the balance gate, its side of the correctly rounded reference.
OPGATE_HOT void add_finite(const OutputCheck& check, bool floating, const Element& x, std::optional<ErrorBalance>& balance,
                Sums& sums, CompareMetrics& m) {
  auto& [sum_rel, sum_sq, dot, norm_e, norm_g, n_pos, n_neg, n_finite, worst_abs_er] = sums;
  const auto& [i, e, er, g, ref, abs_err, allowed] = x;
  const DType T = check.device_dtype;
    if (allowed > 0) m.budget_used = std::max(m.budget_used, abs_err / allowed);
    if (check.kind != CheckKind::kExact) m.ascend.add(is_integer(T) ? er : ref, g, kPermilleRate);
    const double rel = abs_err / (std::fabs(ref) + kMereEps);
    ++n_finite;
    sum_rel += rel;
    sum_sq += abs_err * abs_err;
    m.mare = std::max(m.mare, rel);
    if (ref != 0) m.max_rel = std::max(m.max_rel, abs_err / std::fabs(ref));
    if (abs_err > m.max_abs) {
      m.max_abs = abs_err;
      worst_abs_er = er;
    }
    dot += g * ref;
    norm_e += ref * ref;
    norm_g += g * g;
    if (g > ref) ++n_pos;
    if (g < ref) ++n_neg;
    // The balance gate looks past the final rounding: errors against the correctly rounded
    // reference, except at ties, where that rounding itself picks a side (also ties reached
    // through an intermediate rounding, check.ties_via), and except where the reference allows a
    // relative error of 100 % or more: there the kernel's value is not a rounding of the reference
    // (e.g. IFA scores of 4.8e5, whose fp32 ulp moves exp by 3 %, under the convex-hull bound) and
    // its side says nothing about a truncating site. Which elements count is decided by the
    // reference alone, so the gate's probability model still holds for the rest.
    if (balance && g != er && (er == 0 || allowed < std::fabs(er)) && !on_boundary(T, e, check.rounding) &&
        !(check.ties_via && on_boundary(T, round_to(*check.ties_via, e, check.rounding), check.rounding))) {
      const int sign = g > er ? 1 : -1;
      balance->add(i, sign, er == 0 ? 0 : (er > 0 ? sign : -sign));
    }
    if (floating) {
      const double ulps = std::fabs(g - er) / fast_ulp(T, er);
      m.max_ulp = std::max(m.max_ulp, ulps);
      ++m.ulp_hist[static_cast<size_t>(ulp_bucket(ulps))];
    }
}

// The aggregate metrics from the sums, and the worst points in rank order.
// -log2 of the relative RMS error sqrt(sum (a - g)^2 / sum g^2): the mantissa bits of the fp64
// reference the output kept, capped at a double's 53 (no error at all); 0 when the reference is
// all zero and the output is not.
double effective_bits(double sum_sq_err, double sum_sq_ref) {
  constexpr double kAll = 53;
  if (sum_sq_err == 0) return kAll;
  if (sum_sq_ref == 0) return 0;
  const double bits = -0.5 * std::log2(sum_sq_err / sum_sq_ref);
  return bits > 0 ? std::min(bits, kAll) : 0.0;  // never -0: an error as large as the reference
}

void finish_metrics(const Sums& sums, WorstPoints& worst, CompareResult& r) {
  CompareMetrics& m = r.metrics;
  const auto& [sum_rel, sum_sq, dot, norm_e, norm_g, n_pos, n_neg, n_finite, worst_abs_er] = sums;
  if (n_finite > 0) {
    m.mere = sum_rel / static_cast<double>(n_finite);
    m.rmse = std::sqrt(sum_sq / static_cast<double>(n_finite));
  }
  if (m.compared > 0) m.error_balance = static_cast<double>(n_pos - n_neg) / static_cast<double>(m.compared);
  m.effective_bits = effective_bits(sum_sq, norm_e);
  if (norm_e > 0 && norm_g > 0) {
    m.cosine = dot / (std::sqrt(norm_e) * std::sqrt(norm_g));
  } else {
    m.cosine = (norm_e == 0 && norm_g == 0) ? 1.0 : 0.0;
  }
  // Largest score first; equal scores in index order, so a report lists tied points the same way
  // on every run.
  std::sort(worst.begin(), worst.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second.flat < b.second.flat;
  });
  for (auto& w : worst) r.worst.push_back(std::move(w.second));
}

// Output-level decision: elementwise failures within the standard's allowance, plus the
// standard's aggregate criteria, and the message.
void decide(const OutputCheck& check, double worst_abs_er, std::optional<ErrorBalance>& balance, CompareResult& r) {
  CompareMetrics& m = r.metrics;
  const DType T = check.device_dtype;
  r.passed = m.mismatches <= allowed_bad(check, m.compared) && m.nonfinite_mismatch == 0;
  std::string why;
  if (check.kind == CheckKind::kTolerance && check.tol.standard == Standard::kAscendMixed) {
    const double cap = std::max(mixed_const(T).floor, 32 * ulp(T, worst_abs_er));
    if (m.max_abs > cap) {
      r.passed = false;
      why = fmt::format("max abs error {:.6g} > cap {:.6g}", m.max_abs, cap);
    }
  }
  if (check.kind == CheckKind::kTolerance && check.tol.standard == Standard::kMereMare) {
    const double t = mere_threshold(T);
    if (m.mere >= t) {
      r.passed = false;
      why = fmt::format("MERE {:.6g} >= {:.6g}", m.mere, t);
    }
  }
  if (check.kind == CheckKind::kTolerance && check.tol.standard == Standard::kAscendV03 && !is_integer(T)) {
    const double eb = v03_limits(check.op_class, T, check.accumulations).eb;
    if (std::fabs(m.ascend.eb()) > eb) {
      r.passed = false;
      why = fmt::format("error balance |EB| {:.3g} > {:.3g}", std::fabs(m.ascend.eb()), eb);
    }
  }
  if (check.kind == CheckKind::kTolerance && check.tol.standard == Standard::kAscendDualPermille &&
      m.ascend.max_rel_over >= dual_permille_for(T).cap) {
    r.passed = false;
    why = fmt::format("largest relative error {:.3g} >= cap {:g}", m.ascend.max_rel_over, dual_permille_for(T).cap);
  }
  if (balance) {
    const ErrorBalance::Verdict b = balance->verdict();
    m.balance_pos = b.n_pos;
    m.balance_neg = b.n_neg;
    m.balance_away = b.n_away;
    m.balance_toward = b.n_toward;
    m.balance_limit = b.limit;
    if (!b.balanced) {
      r.passed = false;
      why = fmt::format("errors unbalanced: {} above and {} below the correctly rounded reference, {} away from and {} "
                        "toward zero, |difference| > {:.1f} (a correct kernel exceeds it with probability < 1e-9)",
                        b.n_pos, b.n_neg, b.n_away, b.n_toward, b.limit);
    }
  }
  if (m.poison_left > 0) {
    r.passed = false;
    why = fmt::format("{} defined element(s) left unwritten (still poison)", m.poison_left);
  }
  if (r.passed) {
    r.message = fmt::format("ok: {} compared ({} determined), max abs {:.3g}, max ulp {:.3g}", m.compared,
                            m.determined, m.max_abs, m.max_ulp);
  } else {
    r.message = fmt::format("{} of {} compared elements outside {} (allowed {}){}{}", m.mismatches,
                            m.compared, r.standard, allowed_bad(check, m.compared),
                            why.empty() ? "" : "; ", why);
  }
}

// Ascend's standards beside the gating verdict (core/ascend_standard.h). Exact outputs are binary
// equality under v0.3 (their own check); an integer output of a tolerance check is v0.3's
// "at most 1 step" from the rounded golden. Outputs outside the standards' scope say why. Non-finite
// mismatches and elements left unwritten fail every standard: the statistics cover finite elements.
void judge_standards(const OutputCheck& check, CompareResult& r) {
  const CompareMetrics& m = r.metrics;
  const bool broken = m.nonfinite_mismatch > 0 || m.poison_left > 0;
  StandardVerdict v03, permille;
  if (check.kind == CheckKind::kExact) {
    v03.passed = r.passed;
    v03.detail = "binary equality (the exact check)";
    permille.applies = false;
    permille.detail = "not applicable: exact output";
  } else if (!check.standards_na.empty()) {
    v03.applies = permille.applies = false;
    v03.detail = permille.detail = "not applicable: " + check.standards_na;
  } else {
    if (is_integer(check.device_dtype)) {
      v03.passed = m.ascend.max_abs_err <= 1;
      v03.detail = fmt::format("max |a - round(g)| {:g} <= 1 step", m.ascend.max_abs_err);
      // 0.005 max(|g|, 1) is below one step for every |g| < 200 and the cap fails a one-step
      // difference below 10: the old standard would count each correctly rounded near-tie.
      permille.applies = false;
      permille.detail = "not applicable: an integer output, within 1 step under ascend-v0.3 (the 0.005 rate is below "
                        "one step)";
    } else {
      v03 = judge_v03(m.ascend, v03_limits(check.op_class, check.device_dtype, check.accumulations));
      permille = judge_dual_permille(m.ascend, dual_permille_for(check.device_dtype));
    }
  }
  for (StandardVerdict* v : {&v03, &permille}) {
    if (broken && v->applies) {
      v->passed = false;
      v->detail += "; non-finite or unwritten elements";
    }
  }
  r.standards = {{"ascend-v0.3", v03}, {"ascend-dual-permille", permille}};
}

// A point worth reporting, kept as plain values until it is known to be among the reported ones.
struct PointRec {
  WorstRank rank;
  Element x;
  Judgement judged;
  bool ok, poison;
};

// Reported before another point: failing first, a larger share of the allowance, then lower index.
bool ranks_before(const PointRec& a, const PointRec& b) {
  return a.rank != b.rank ? a.rank > b.rank : a.x.i < b.x.i;
}

// A vacuity candidate before another: larger |expected| (non-finite ranks -1), then lower index.
bool larger_candidate(const std::pair<double, int64_t>& a, const std::pair<double, int64_t>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

// Keeps the `keep` largest candidates of `cand` (in any order).
void trim_candidates(std::vector<std::pair<double, int64_t>>& cand, int64_t keep) {
  if (static_cast<int64_t>(cand.size()) <= keep) return;
  std::nth_element(cand.begin(), cand.begin() + (keep - 1), cand.end(), larger_candidate);
  cand.resize(static_cast<size_t>(keep));
}

// The kMaxPoints points ranked first (ranks_before), and where the lowest ranked of them sits once
// the list is full: most points of a large output rank below it and cost one comparison.
struct WorstList {
  std::vector<PointRec> points;
  size_t lowest = 0;

  bool would_keep(WorstRank rank, int64_t i) const {
    if (points.size() < kMaxPoints) return true;
    const PointRec& low = points[lowest];
    return rank != low.rank ? rank > low.rank : i < low.x.i;
  }
  void keep(const PointRec& p) {
    if (points.size() < kMaxPoints) {
      points.push_back(p);
    } else if (ranks_before(p, points[lowest])) {
      points[lowest] = p;
    } else {
      return;
    }
    if (points.size() == kMaxPoints) {
      lowest = static_cast<size_t>(
          std::min_element(points.begin(), points.end(),
                           [](const PointRec& a, const PointRec& b) { return ranks_before(b, a); }) -
          points.begin());
    }
  }
};

// What one block of the pass gathers; blocks are merged in element order (merge_part).
struct Part {
  CompareMetrics m;  // counts, maxima and the axis picture of the block
  Sums sums;
  std::optional<ErrorBalance> balance;
  std::vector<PointRec> failures;  // the first kMaxPoints failing points
  WorstList worst;
  std::vector<std::pair<double, int64_t>> largest;  // vacuity: candidates to perturb
  int64_t row_differs = -1;  // vacuity: first row after row0 with a cared element unlike row0's
  int64_t axis_row_end = 0;  // the axis picture: end of the current index of dim 0, and its slice
  size_t axis_slice = 0;
};

// Elements of one block: fixed, so that the blocks and their merge order (and so every floating
// sum) do not depend on the thread count.
constexpr int64_t kBlock = int64_t{1} << 16;

// The fixed inputs of the pass, with typed views of the storage where the dtype has one.
struct Pass {
  const OutputCheck& check;
  const Tensor& expected;
  const Tensor& got;
  const Tensor& magnitude;
  const Tensor& care;
  std::optional<uint64_t> poison_bits;
  const double* expected_f64;   // null: expected.get
  const double* magnitude_f64;  // null: magnitude.get, or 0 when undefined
  const uint8_t* care_u8;       // null: care.get, or every element when undefined
  bool integer_expected;
  bool floating;                // the device dtype is floating (ULP metrics)
  int64_t numel;
  int64_t row_len;              // elements per index of dim 0 (axis picture)
  bool balance;
  int64_t balance_width;
  int64_t keep_largest;         // vacuity candidates kept (allowed_bad of all elements, + 1)
  int64_t row0, width;          // vacuity row swap: row0 >= 0 when tracked, rows of `width`
  double range_max = std::numeric_limits<double>::infinity();  // vacuity: max_finite of a floating T

  double expected_at(int64_t i) const { return expected_f64 != nullptr ? expected_f64[i] : expected.get(i); }
  double magnitude_at(int64_t i) const {
    if (magnitude_f64 != nullptr) return magnitude_f64[i];
    return magnitude.defined() ? magnitude.get(i) : 0.0;
  }
  bool cared_at(int64_t i) const { return care_u8 != nullptr ? care_u8[i] != 0 : cared(care, i); }
};

// f16 values by bit pattern: a table, built once, in place of the general decoding per element.
const double* f16_values() {
  static const std::vector<double> table = [] {
    std::vector<double> t(65536);
    for (uint32_t b = 0; b < 65536; ++b) t[b] = f16_to_double(static_cast<uint16_t>(b));
    return t;
  }();
  return table.data();
}

// Element i of the storage of a tensor of dtype D, as double (what Tensor::get returns).
template <DType D>
OPGATE_HOT double load_typed(const uint8_t* base, int64_t i) {
  if constexpr (D == DType::kF64 || D == DType::kF32 || D == DType::kI32) {
    using S = std::conditional_t<D == DType::kF64, double, std::conditional_t<D == DType::kF32, float, int32_t>>;
    S v;
    std::memcpy(&v, base + static_cast<size_t>(i) * sizeof(S), sizeof(S));
    return static_cast<double>(v);
  } else if constexpr (D == DType::kBF16 || D == DType::kF16) {
    uint16_t h;
    std::memcpy(&h, base + static_cast<size_t>(i) * 2, 2);
    if constexpr (D == DType::kF16) {
      return f16_values()[h];
    } else {
      if ((h & 0x7F80) == 0x7F80) return bf16_to_double(h);  // Inf and NaN keep the general decoding
      const uint32_t w = static_cast<uint32_t>(h) << 16;
      float f;
      std::memcpy(&f, &w, sizeof f);
      return static_cast<double>(f);
    }
  } else if constexpr (D == DType::kI8) {
    return static_cast<double>(static_cast<int8_t>(base[i]));
  } else if constexpr (D == DType::kU8) {
    return static_cast<double>(base[i]);
  } else {
    return load_element(D, base + static_cast<size_t>(i) * dtype_size(D));
  }
}

// One compared element: judged by the check, counted into the block's metrics, kept when off.
void compare_element(const Pass& p, int64_t i, double e, double g, Part& part) {
  const OutputCheck& check = p.check;
  CompareMetrics& m = part.m;
  const DType T = check.device_dtype;
  ++m.compared;
  const double er = p.integer_expected ? e : fast_round(T, e, check.rounding);
  const double mag = p.magnitude_at(i);
  const double allowed = element_allowance(check, e, mag);
  const Judgement judged = judge(check, e, er, g, allowed, mag);
  const bool ok = judged.ok;
  const double abs_err = judged.abs_err;
  if (judged.determined) ++m.determined;
  // Still holding the poison and wrong: left unwritten. An integer poison (0xA5) is also a valid
  // value, which a quantized output may hold within its tolerance (a one-step flip onto -91);
  // that is a correct write, not an unwritten element. Float poisons are NaNs and never pass.
  const bool poison = p.poison_bits && !ok && p.got.bits(i) == *p.poison_bits;
  const double ref = check.kind == CheckKind::kTolerance ? e : er;
  const Element x{i, e, er, g, ref, abs_err, allowed};
  if (!std::isfinite(er) || !std::isfinite(e) || !std::isfinite(g)) {
    if (!ok) ++m.nonfinite_mismatch;
  } else {
    add_finite(check, p.floating, x, part.balance, part.sums, m);
  }
  if (poison) ++m.poison_left;
  if (!ok) ++m.mismatches;
  if (!m.axis_budget.empty()) {
    if (i >= part.axis_row_end) {  // the next index of dim 0 (elements come in increasing order)
      const int64_t row = i / p.row_len;
      part.axis_slice = static_cast<size_t>(row * static_cast<int64_t>(m.axis_budget.size()) / m.axis_rows);
      part.axis_row_end = (row + 1) * p.row_len;
    }
    const size_t slice = part.axis_slice;
    const bool measurable = allowed > 0 && std::isfinite(abs_err);
    const double share = measurable ? abs_err / allowed : 0.0;
    const double v = ok ? share : (measurable ? std::max(share, 1.0) : CompareMetrics::kAxisFailing);
    m.axis_budget[slice] = std::max(m.axis_budget[slice], v);
  }
  if (!ok || abs_err > 0) {
    const WorstRank rank{!ok, allowed > 0 ? abs_err / allowed : abs_err * 1e300};
    const bool first_failure = !ok && part.failures.size() < kMaxPoints;
    if (first_failure || part.worst.would_keep(rank, i)) {
      const PointRec rec{rank, x, judged, ok, poison};
      if (first_failure) part.failures.push_back(rec);
      part.worst.keep(rec);
    }
  }
}

// What an exact check expects of the device: the value rounded to its dtype. Rows are told apart by
// it, not by the raw reference: rows whose values differ only below the dtype's precision (e.g.
// products that all flush to 0) are the same rows on the device, and swapping them changes nothing.
double device_value(const OutputCheck& check, bool integer_expected, double e) {
  return integer_expected ? e : fast_round(check.device_dtype, e, check.rounding);
}

// A vacuity candidate's rank: |e| for an expected value in the dtype's range (the largest first,
// so the perturbation lands on a non-trivial element), then a finite one beyond the range (its
// tolerance may span the whole dtype), then NaN and Inf (perturbed into a number).
double candidate_rank(double e, double range_max) {
  if (!std::isfinite(e)) return -1.0;
  return std::fabs(e) <= range_max ? std::fabs(e) : -0.5;
}

// The vacuity check's candidates and the row it would swap with row0, for the cared element i.
OPGATE_HOT void note_vacuity(const Pass& p, int64_t i, double e, Part& part) {
  const std::pair<double, int64_t> cand{candidate_rank(e, p.range_max), i};
  if (static_cast<int64_t>(part.largest.size()) < p.keep_largest) {
    part.largest.push_back(cand);
  } else if (p.keep_largest == 1) {
    if (larger_candidate(cand, part.largest[0])) part.largest[0] = cand;
  } else {
    part.largest.push_back(cand);
    if (static_cast<int64_t>(part.largest.size()) >= 2 * p.keep_largest) trim_candidates(part.largest, p.keep_largest);
  }
  if (p.row0 >= 0 && part.row_differs < 0 && i >= (p.row0 + 1) * p.width &&
      !same_value(device_value(p.check, p.integer_expected, e),
                  device_value(p.check, p.integer_expected, p.expected_at(p.row0 * p.width + i % p.width)))) {
    part.row_differs = i / p.width;
  }
}

// The elements [begin, end), with got's storage read as dtype G.
template <DType G>
void compare_block(const Pass& p, int64_t begin, int64_t end, Part& part) {
  const uint8_t* got = p.got.data();
  for (int64_t i = begin; i < end; ++i) {
    if (!p.cared_at(i)) continue;
    const double e = p.expected_at(i);
    compare_element(p, i, e, load_typed<G>(got, i), part);
    note_vacuity(p, i, e, part);
  }
}

// An exact check's matching elements (finite, got's value is the rounded expected one, sign of
// zero included) between the others: compare_element would add zero errors and shares, maxima of
// zero and no worst point, so only the counts and the three sums of the cosine change. They are
// kept here, in registers, and handed to the block's Sums (`settle`) before compare_element adds
// to the same sums: every sum takes the same operands in the same order as compare_element alone.
struct MatchRun {
  double dot, norm_e, norm_g;
  int64_t matched = 0;
  explicit MatchRun(const Sums& s) : dot(s.dot), norm_e(s.norm_e), norm_g(s.norm_g) {}
  OPGATE_HOT void add(double er, double g) {
    ++matched;
    dot += g * er;
    norm_e += er * er;
    norm_g += g * g;
  }
  void settle(const Pass& p, Part& part) {
    part.sums.dot = dot;
    part.sums.norm_e = norm_e;
    part.sums.norm_g = norm_g;
    part.sums.n_finite += matched;
    part.m.compared += matched;
    part.m.determined += matched;
    if (p.floating) part.m.ulp_hist[0] += static_cast<uint64_t>(matched);
    matched = 0;
  }
};

// compare_block for an exact check, most of whose elements match.
template <DType G>
void compare_block_exact(const Pass& p, int64_t begin, int64_t end, Part& part) {
  const uint8_t* got = p.got.data();
  const DType T = p.check.device_dtype;
  const Rounding rounding = p.check.rounding;
  MatchRun run(part.sums);
  for (int64_t i = begin; i < end; ++i) {
    if (!p.cared_at(i)) continue;
    const double e = p.expected_at(i);
    const double g = load_typed<G>(got, i);
    const double er = p.integer_expected ? e : fast_round(T, e, rounding);
    if (std::isfinite(e) && std::isfinite(er) && same_value(er, g)) {
      run.add(er, g);
    } else {
      run.settle(p, part);
      compare_element(p, i, e, g, part);
      run = MatchRun(part.sums);
    }
    note_vacuity(p, i, e, part);
  }
  run.settle(p, part);
}

template <bool Exact>
void compare_range_typed(DType g, const Pass& p, int64_t begin, int64_t end, Part& part) {
  switch (g) {
    case DType::kF64: return Exact ? compare_block_exact<DType::kF64>(p, begin, end, part)
                                   : compare_block<DType::kF64>(p, begin, end, part);
    case DType::kF32: return Exact ? compare_block_exact<DType::kF32>(p, begin, end, part)
                                   : compare_block<DType::kF32>(p, begin, end, part);
    case DType::kF16: return Exact ? compare_block_exact<DType::kF16>(p, begin, end, part)
                                   : compare_block<DType::kF16>(p, begin, end, part);
    case DType::kBF16: return Exact ? compare_block_exact<DType::kBF16>(p, begin, end, part)
                                    : compare_block<DType::kBF16>(p, begin, end, part);
    case DType::kI8: return Exact ? compare_block_exact<DType::kI8>(p, begin, end, part)
                                  : compare_block<DType::kI8>(p, begin, end, part);
    case DType::kU8: return Exact ? compare_block_exact<DType::kU8>(p, begin, end, part)
                                  : compare_block<DType::kU8>(p, begin, end, part);
    case DType::kI32: return Exact ? compare_block_exact<DType::kI32>(p, begin, end, part)
                                   : compare_block<DType::kI32>(p, begin, end, part);
    case DType::kI64: return Exact ? compare_block_exact<DType::kI64>(p, begin, end, part)
                                   : compare_block<DType::kI64>(p, begin, end, part);
    case DType::kU64: return Exact ? compare_block_exact<DType::kU64>(p, begin, end, part)
                                   : compare_block<DType::kU64>(p, begin, end, part);
    case DType::kBool: return Exact ? compare_block_exact<DType::kBool>(p, begin, end, part)
                                    : compare_block<DType::kBool>(p, begin, end, part);
  }
}

void compare_range(DType g, const Pass& p, int64_t begin, int64_t end, Part& part) {
  if (p.check.kind == CheckKind::kExact) return compare_range_typed<true>(g, p, begin, end, part);
  compare_range_typed<false>(g, p, begin, end, part);
}

// Adds `next` (the block after everything in `total`) to `total`: counts and integer tallies add,
// maxima keep the first largest, floating sums add in block order.
void merge_part(Part& total, Part& next, int64_t keep_largest) {
  CompareMetrics& m = total.m;
  const CompareMetrics& n = next.m;
  m.compared += n.compared;
  m.mismatches += n.mismatches;
  m.poison_left += n.poison_left;
  m.nonfinite_mismatch += n.nonfinite_mismatch;
  m.determined += n.determined;
  if (n.max_abs > m.max_abs) {
    m.max_abs = n.max_abs;
    total.sums.worst_abs_er = next.sums.worst_abs_er;
  }
  m.max_rel = std::max(m.max_rel, n.max_rel);
  m.mare = std::max(m.mare, n.mare);
  m.max_ulp = std::max(m.max_ulp, n.max_ulp);
  m.budget_used = std::max(m.budget_used, n.budget_used);
  m.ascend.merge(n.ascend);
  for (size_t k = 0; k < m.ulp_hist.size(); ++k) m.ulp_hist[k] += n.ulp_hist[k];
  for (size_t k = 0; k < m.axis_budget.size(); ++k) m.axis_budget[k] = std::max(m.axis_budget[k], n.axis_budget[k]);
  Sums& s = total.sums;
  const Sums& t = next.sums;
  s.sum_rel += t.sum_rel;
  s.sum_sq += t.sum_sq;
  s.dot += t.dot;
  s.norm_e += t.norm_e;
  s.norm_g += t.norm_g;
  s.n_pos += t.n_pos;
  s.n_neg += t.n_neg;
  s.n_finite += t.n_finite;
  if (total.balance) total.balance->absorb(*next.balance);
  for (const PointRec& f : next.failures) {
    if (total.failures.size() < kMaxPoints) total.failures.push_back(f);
  }
  for (const PointRec& w : next.worst.points) total.worst.keep(w);
  total.largest.insert(total.largest.end(), next.largest.begin(), next.largest.end());
  if (static_cast<int64_t>(total.largest.size()) >= 2 * keep_largest) trim_candidates(total.largest, keep_largest);
  if (total.row_differs < 0) total.row_differs = next.row_differs;
}

ComparePoint make_point(const PointRec& rec, const Tensor& got) {
  const auto& [i, e, er, g, ref, abs_err, allowed] = rec.x;
  ComparePoint p;
  p.flat = i;
  p.index = got.unravel(i);
  p.expected = e;
  p.expected_rounded = er;
  p.got = g;
  p.abs_err = abs_err;
  p.rel_err = std::isfinite(abs_err) ? abs_err / (std::fabs(ref) + kMereEps) : abs_err;
  p.allowed = allowed;
  p.poison = rec.poison;
  p.interval = rec.judged.interval;
  p.accepted_lo = rec.judged.lo;
  p.accepted_hi = rec.judged.hi;
  return p;
}

}  // namespace

CompareResult compare_output(const OutputCheck& check, const Tensor& expected, const Tensor& got,
                             const Tensor& magnitude, const Tensor& care,
                             std::optional<uint64_t> poison_bits) {
  CompareResult r;
  r.name = check.name;
  r.kind = check.kind;
  r.standard = check.kind == CheckKind::kTolerance ? standard_name(check.tol.standard)
                                                   : check_kind_name(check.kind);
  CompareMetrics& m = r.metrics;
  m.elements = got.numel();
  if (check.kind == CheckKind::kUndefined) {
    r.message = "not compared (undefined output)";
    return r;
  }
  if (expected.shape() != got.shape()) {
    r.passed = false;
    r.message = fmt::format("shape mismatch: expected {} got {}", shape_to_string(expected.shape()),
                            shape_to_string(got.shape()));
    return r;
  }
  const int64_t numel = got.numel();
  const int64_t balance_width = got.rank() >= 2 ? got.dim(got.rank() - 1) : numel;
  Pass pass{check, expected, got, magnitude, care, poison_bits,
            expected.dtype() == DType::kF64 ? expected.ptr<double>() : nullptr,
            magnitude.defined() && magnitude.dtype() == DType::kF64 ? magnitude.ptr<double>() : nullptr,
            care.defined() && care.dtype() == DType::kU8 ? care.ptr<uint8_t>() : nullptr,
            is_integer(expected.dtype()), is_floating(check.device_dtype), numel, 1, one_rounding_bound(check),
            balance_width, allowed_bad(check, numel) + 1, -1, 1};
  if (pass.floating) pass.range_max = max_finite(check.device_dtype);
  Part total;
  if (got.rank() >= 2 && got.dim(0) >= 2 && numel > 0) {
    total.m.axis_rows = got.dim(0);
    total.m.axis_budget.assign(static_cast<size_t>(std::min(got.dim(0), CompareMetrics::kAxisSlices)), 0.0);
    pass.row_len = numel / got.dim(0);
  }
  if (pass.balance) total.balance.emplace(numel, balance_width, check.balance_cluster);
  // The row swap of the vacuity check: row0 is the first row whose elements are all cared.
  if (check.kind == CheckKind::kExact && got.rank() >= 2 && got.dim(0) >= 2 && numel > 0) {
    pass.width = numel / got.dim(0);
    for (int64_t row = 0; row < got.dim(0) && pass.row0 < 0; ++row) {
      bool all = true;
      for (int64_t j = 0; j < pass.width && all; ++j) all = pass.cared_at(row * pass.width + j);
      if (all) pass.row0 = row;
    }
  }
  // Blocks run a wave at a time, so that the blocks' partial results held at once stay bounded.
  const int64_t blocks = (numel + kBlock - 1) / kBlock;
  const int64_t wave = std::max<int64_t>(8, 4 * math::threads());
  std::vector<Part> parts;
  for (int64_t w0 = 0; w0 < blocks; w0 += wave) {
    const int64_t n = std::min(wave, blocks - w0);
    parts.assign(static_cast<size_t>(n), Part{});
    math::parallel_for(n, [&](int64_t k) {
      Part& part = parts[static_cast<size_t>(k)];
      const int64_t begin = (w0 + k) * kBlock;
      const int64_t end = std::min(numel, begin + kBlock);
      part.m.axis_rows = total.m.axis_rows;
      part.m.axis_budget.assign(total.m.axis_budget.size(), 0.0);
      if (pass.balance) part.balance.emplace(numel, balance_width, check.balance_cluster, begin, end);
      compare_range(got.dtype(), pass, begin, end, part);
    });
    for (Part& part : parts) merge_part(total, part, pass.keep_largest);
  }
  total.m.elements = m.elements;
  m = std::move(total.m);  // the aggregate metrics and the balance verdict come next
  for (const PointRec& f : total.failures) r.first_failures.push_back(make_point(f, got));
  WorstPoints worst;
  for (const PointRec& w : total.worst.points) worst.emplace_back(w.rank, make_point(w, got));
  finish_metrics(total.sums, worst, r);
  decide(check, total.sums.worst_abs_er, total.balance, r);
  judge_standards(check, r);
  if (r.passed) {  // the error picture is drawn for failing outputs only
    r.metrics.axis_budget.clear();
    r.metrics.axis_rows = 0;
  }
  trim_candidates(total.largest, pass.keep_largest);
  r.vacuity.ready = true;
  r.vacuity.largest = std::move(total.largest);
  r.vacuity.row0 = pass.row0;
  r.vacuity.row_differs = total.row_differs;
  return r;
}

namespace {

// Does `got` with n changes (change(k): flat index and new value bits) still pass? Elementwise
// standards judge the changed elements alone, and stop once the output must fail: a change can
// only repair an element that failed before, so more newly failing elements than allowed decide.
template <class Change>
bool changes_still_pass(const OutputCheck& check, const Tensor& expected, const Tensor& got,
                        const Tensor& magnitude, const Tensor& care, const CompareResult* original, int64_t n,
                        const Change& change) {
  if (original != nullptr && elementwise_only(check)) {
    const int64_t allowed = allowed_bad(check, original->metrics.compared);
    int64_t newly_bad = 0, repaired = 0;
    for (int64_t k = 0; k < n; ++k) {
      const auto [i, b] = change(k);
      uint8_t value[8];
      store_bits(got.dtype(), value, b);
      const bool bad_now = !element_ok(check, expected, magnitude, i, load_element(got.dtype(), value));
      const bool bad_before = !element_ok(check, expected, magnitude, i, got.get(i));
      newly_bad += bad_now && !bad_before ? 1 : 0;
      repaired += bad_before && !bad_now ? 1 : 0;
      if (newly_bad > allowed) return false;
    }
    return original->metrics.mismatches + newly_bad - repaired <= allowed;
  }
  Tensor changed = got.clone();
  for (int64_t k = 0; k < n; ++k) {
    const auto [i, b] = change(k);
    changed.set_bits(i, b);
  }
  return compare_output(check, expected, changed, magnitude, care).passed;
}

// The representable neighbour of v in T toward +inf (dir > 0) or -inf: +-inf past the largest
// finite value of a floating T; v +- 1 for an integer T (the caller checks its range).
double neighbour(DType T, double v, int dir) {
  if (!is_floating(T)) return v + dir;
  if (v == 0) return dir * ulp(T, 0.0);  // the smallest subnormal, of either sign
  uint8_t buf[8] = {};
  store_element(T, buf, v);
  // Sign and magnitude: a step away from zero is the next larger magnitude's bit pattern.
  const uint64_t b = load_bits(T, buf);
  store_bits(T, buf, (v > 0) == (dir > 0) ? b + 1 : b - 1);
  return load_element(T, buf);
}

// Is v a finite value of T (inside an integer T's range)?
bool in_range(DType T, double v) { return std::isfinite(v) && round_to(T, v) == v; }

// The nearest value of T beyond `allowed` from `e` (toward +inf first, else toward -inf), finite.
// An aim past the largest finite value starts the search at that end of the range, whose values
// may still be beyond the allowance (65504 - 96 is 65408 in f16 though 65504 + 96 overflows).
std::optional<double> value_beyond(DType T, double e, double er, double allowed, bool integer) {
  for (int dir : {1, -1}) {
    double v;
    if (integer || !is_floating(T)) {
      v = round_to(T, er + dir * (std::floor(allowed) + 1));
    } else {
      v = round_to(T, e + dir * allowed * (1 + 0x1p-20), Rounding::kNearestEven);
      if (!std::isfinite(v)) v = dir * max_finite(T);
      for (int step = 0; step < 8 && std::isfinite(v) && std::fabs(v - e) <= allowed; ++step) v = neighbour(T, v, dir);
    }
    if (std::isfinite(v) && std::fabs(v - e) > allowed && !same_value(v, er)) return v;
  }
  return std::nullopt;
}

// A one-rounding bound accepts exactly [lo, hi]: the nearest finite values of T outside it, above
// hi first. An end at +-inf (the reference itself overflows) has no finite value past it.
std::optional<double> value_outside(DType T, double lo, double hi) {
  if (std::isfinite(hi)) {
    const double up = neighbour(T, hi, 1);
    if (in_range(T, up)) return up;
  }
  if (std::isfinite(lo)) {
    const double down = neighbour(T, lo, -1);
    if (in_range(T, down)) return down;
  }
  return std::nullopt;
}

// The row-swap half of vacuity_check: for an exact output, two distinct fully compared rows
// swapped must fail. `still_passes` judges a set of changed elements.
// With `known` (gathered by compare_output), the rows come from it: row0 is the first fully cared
// row, and a fully cared row_differs is the first fully cared row unlike row0 (a fully cared row
// between them that differed from row0 would have a differing cared element before row_differs).
// Only when row_differs is not fully cared are the rows searched here.
template <class StillPasses>
std::optional<std::string> row_swap_check(const OutputCheck& check, const Tensor& expected, const Tensor& got,
                                          const Tensor& care, const VacuityInputs* known,
                                          StillPasses&& still_passes) {
  // Row swap: a permutation of distinct compared rows must be seen too. When every compared row is
  // identical (e.g. an all-zero fill where every slot is dropped), no permutation changes the
  // output, so there is no defect for it to hide; the element perturbation above was seen.
  if (check.kind == CheckKind::kExact && got.rank() >= 2 && got.dim(0) >= 2) {
    const int64_t rows = got.dim(0);
    const int64_t width = got.numel() / rows;
    auto swapped_passes = [&](int64_t r0, int64_t r1) -> std::optional<std::string> {
      // Change 2j puts row r1's element j into row r0, change 2j + 1 the reverse. Made one at a
      // time: a row of a 3-D output is a whole slice (20 M elements on the nightly tier).
      auto swap = [&](int64_t k) {
        const int64_t j = k / 2;
        const int64_t to = k % 2 == 0 ? r0 : r1, from = k % 2 == 0 ? r1 : r0;
        return std::pair<int64_t, uint64_t>{to * width + j, got.bits(from * width + j)};
      };
      if (still_passes(2 * width, swap)) return fmt::format("{}: swapping rows {} and {} still passes", check.name, r0, r1);
      return std::nullopt;
    };
    if (known != nullptr) {
      if (known->row0 < 0 || known->row_differs < 0) return std::nullopt;
      bool all = true;
      for (int64_t j = 0; j < width && all; ++j) all = cared(care, known->row_differs * width + j);
      if (all) return swapped_passes(known->row0, known->row_differs);
    }
    std::vector<int64_t> full_rows;
    for (int64_t row = 0; row < rows; ++row) {
      bool all = true;
      for (int64_t j = 0; j < width && all; ++j) all = cared(care, row * width + j);
      if (all) full_rows.push_back(row);
    }
    if (full_rows.size() >= 2) {
      const int64_t r0 = full_rows[0];
      std::optional<int64_t> r1;
      for (size_t k = 1; k < full_rows.size() && !r1; ++k) {
        for (int64_t j = 0; j < width; ++j) {
          const bool integer = is_integer(expected.dtype());
          if (!same_value(device_value(check, integer, expected.get(r0 * width + j)),
                          device_value(check, integer, expected.get(full_rows[k] * width + j)))) {
            r1 = full_rows[k];
            break;
          }
        }
      }
      if (!r1) return std::nullopt;
      return swapped_passes(r0, *r1);
    }
  }
  return std::nullopt;
}

// Every cared element as a vacuity candidate: (candidate_rank, index).
std::vector<std::pair<double, int64_t>> all_candidates(const Tensor& expected, const Tensor& got,
                                                       const Tensor& care, DType T) {
  const double range_max = is_floating(T) ? max_finite(T) : std::numeric_limits<double>::infinity();
  std::vector<std::pair<double, int64_t>> cand;
  for (int64_t i = 0; i < got.numel(); ++i) {
    if (!cared(care, i)) continue;
    cand.emplace_back(candidate_rank(expected.get(i), range_max), i);
  }
  return cand;
}

// The vacuity check's move of element i: the nearest value its check rejects, or none when its
// tolerance spans the dtype's range; `allowed` is set to its allowance.
std::optional<double> vacuity_move(const OutputCheck& check, const Tensor& expected, const Tensor& magnitude,
                                   int64_t i, double& allowed) {
  const DType T = check.device_dtype;
  const bool integer_expected = is_integer(expected.dtype());
  const double e = expected.get(i);
  const double er = integer_expected ? e : round_to(T, e, check.rounding);
  const double mag = magnitude.defined() ? magnitude.get(i) : 0.0;
  allowed = element_allowance(check, centre(check, e, er), mag);
  // An expected NaN or Inf: any number there fails.
  // A one-rounding bound accepts [lo, hi] (which toward-zero rounding stretches up to a spacing
  // past e + allowed on the negative side): the move leaves that interval, to its nearest
  // neighbour, also where one end reaches past the largest finite value.
  if (!std::isfinite(e)) return 0.0;
  const Judgement at_er = judge(check, e, er, er, allowed, mag);
  // Beyond the range, a one-rounding bound may still reach down to finite values (then below
  // its lower end is the nearest failure); otherwise only the same Inf passes there.
  if (!std::isfinite(er)) {
    if (!at_er.interval || at_er.lo == at_er.hi) return 0.0;  // only that Inf passes
    return value_outside(T, at_er.lo, at_er.hi);
  }
  return at_er.interval ? value_outside(T, at_er.lo, at_er.hi)
                        : value_beyond(T, centre(check, e, er), er, allowed, integer_expected);
}

}  // namespace

std::optional<std::string> vacuity_check(const OutputCheck& check, const Tensor& expected,
                                         const Tensor& got, const Tensor& magnitude,
                                         const Tensor& care, const CompareResult* original) {
  auto still_passes = [&](int64_t n, const auto& change) {
    return changes_still_pass(check, expected, got, magnitude, care, original, n, change);
  };
  if (check.kind == CheckKind::kUndefined) return std::nullopt;
  // An empty output (an empty valid call, e.g. MoeFFN with M = 0) has a single possible value, so
  // no defect can hide in its comparison: what can go wrong there (the return code, a write past
  // the zero-size buffer into its guard bytes, a changed input) is checked elsewhere.
  if (got.numel() == 0) return std::nullopt;
  // Candidates: cared elements, those with a finite expected value first and the largest
  // magnitude first among them, so the perturbation lands on a non-trivial element. An expected
  // NaN or Inf is perturbed into a number, which no check accepts.
  // compare_output gathered the largest ones already when `original` is given.
  const VacuityInputs* known = original != nullptr && original->vacuity.ready ? &original->vacuity : nullptr;
  auto cand = known != nullptr ? known->largest : all_candidates(expected, got, care, check.device_dtype);
  const int64_t compared = known != nullptr ? original->metrics.compared : static_cast<int64_t>(cand.size());
  // Every element declared undefined (by the API, or where the kernel's own precision overflows):
  // nothing can hide in a comparison that accepts anything by design, and what is still checkable
  // (return code, guard bytes, inputs, the care mask against the golden one) is checked elsewhere.
  if (compared == 0 && care.defined()) return std::nullopt;
  if (compared == 0) return fmt::format("{}: no element is compared (care mask is empty)", check.name);
  const int64_t needed = allowed_bad(check, compared) + 1;
  if (compared < needed) {
    return fmt::format("{}: only {} compared element(s); the standard needs {} bad ones to fail", check.name,
                       compared, needed);
  }
  // Only the `needed` largest matter: a partial selection keeps this linear for huge outputs.
  auto larger = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  std::nth_element(cand.begin(), cand.begin() + (needed - 1), cand.end(), larger);
  std::sort(cand.begin(), cand.begin() + needed, larger);
  std::vector<std::pair<int64_t, uint64_t>> changes;
  Tensor scratch = Tensor::zeros(got.dtype(), {1});
  std::string example;
  // An element whose tolerance spans the whole range accepts any value by right (its bound is that
  // wide): it is passed over for the next candidate. Only when too few elements remain that a
  // defect could move out of tolerance is the comparison vacuous.
  int64_t wide = 0;
  std::string wide_example;
  bool all_listed = known == nullptr;
  for (size_t n = 0; static_cast<int64_t>(changes.size()) < needed; ++n) {
    if (n == cand.size()) {
      if (all_listed) {
        return fmt::format("{}: {} of {} compared element(s) have a tolerance wider than their dtype's range (e.g. {}); "
                           "too few are left for the standard to fail",
                           check.name, wide, compared, wide_example);
      }
      // compare_output kept only the largest candidates: walk every element, in the same order.
      cand = all_candidates(expected, got, care, check.device_dtype);
      std::sort(cand.begin(), cand.end(), larger);
      all_listed = true;
      n = 0;
      changes.clear();
      example.clear();
      wide = 0;
    }
    const int64_t i = cand[n].second;
    double allowed = 0;
    const std::optional<double> v = vacuity_move(check, expected, magnitude, i, allowed);
    if (!v) {
      if (wide++ == 0) wide_example = fmt::format("element {} has tolerance {:.3g}", shape_to_string(got.unravel(i)), allowed);
      continue;
    }
    if (example.empty()) {
      example = fmt::format("{} from {:.6g} to {:.6g}", shape_to_string(got.unravel(i)), got.get(i), *v);
    }
    scratch.set(0, *v);
    changes.emplace_back(i, scratch.bits(0));
  }
  if (still_passes(static_cast<int64_t>(changes.size()), [&](int64_t k) { return changes[static_cast<size_t>(k)]; })) {
    return fmt::format("{}: moving {} element(s) beyond tolerance (e.g. {}) still passes", check.name,
                       needed, example);
  }
  return row_swap_check(check, expected, got, care, known, still_passes);
}

void scope_ascend_standards(ComparePlan& plan, bool realistic_fill) {
  if (realistic_fill) return;
  for (OutputCheck& c : plan.outputs) {
    if (c.kind != CheckKind::kExact && c.standards_na.empty()) {
      c.standards_na = "a fill of chosen values (exact grids or adversarial extremes); the standards are calibrated "
                       "on random data, as ATB's tests draw it";
    }
  }
}

void gate_with_standard(ComparePlan& plan, Standard s) {
  for (OutputCheck& c : plan.outputs) {
    if (c.kind != CheckKind::kTolerance || s == Standard::kBound) continue;
    // The old standard does not judge integer outputs (judge_standards).
    const bool na = !c.standards_na.empty() || (s == Standard::kAscendDualPermille && is_integer(c.device_dtype));
    if (na) {
      c.reason += fmt::format(" [{} does not gate here: {}]", standard_name(s),
                              c.standards_na.empty() ? "an integer output" : c.standards_na);
      continue;
    }
    c.tol.standard = s;
    c.reason = fmt::format("gated by {} (run --standard): ", standard_name(s)) + c.reason;
  }
}

}  // namespace opgate
