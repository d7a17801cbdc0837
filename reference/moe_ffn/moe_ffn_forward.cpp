// The aclnnMoeFFN forward pass in double with its per-element error budget: the fp paths charge
// each rounding point of spec §2.7 and propagate it through |W2|; the int8 paths count, per hidden
// value, the int8 rounding boundaries the device's half-precision re-quantisation may cross.
#include "reference/moe_ffn/moe_ffn_forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "core/parallel.h"
#include "reference/math/shared_range.h"
#include "reference/math/shared_round.h"
#include "reference/math/shared_simd.h"
#include "reference/moe_ffn/moe_ffn_bound.h"
#include "reference/moe_ffn/moe_ffn_gemm.h"
#include "reference/moe_ffn/moe_ffn_lanes.h"

namespace opgate::ref::moe_ffn {
namespace {

constexpr int64_t kRowBlock = 256;     // rows of one expert per parallel task (amortises packing b)
constexpr double kTwo24 = 16777216.0;  // int32 -> fp32 conversion is exact below 2^24
// Hidden elements from which the high-performance path tabulates its activation over the 65536
// fp16 patterns (the table costs about as much as this many direct evaluations' quarter).
constexpr int64_t kHalfTableMinElements = int64_t{1} << 18;

// fp16/bf16 through the exact vector conversion, in blocks over the threads; others by element.
std::vector<double> values_of(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  if (t.dtype() != DType::kF16 && t.dtype() != DType::kBF16) {
    for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get(i);
    return v;
  }
  constexpr int64_t kBlock = int64_t{1} << 20;
  math::parallel_for((t.numel() + kBlock - 1) / kBlock, [&](int64_t b) {
    const int64_t first = b * kBlock;
    math::kernels().halves_to_double(t.ptr<uint16_t>() + first, std::min(kBlock, t.numel() - first),
                                     t.dtype() == DType::kBF16, v.data() + first);
  });
  return v;
}

int product_grid(int a, int b) { return a == kNoGrid || b == kNoGrid ? kNoGrid : a + b; }
int grid_of(const std::vector<double>& v) { return grid_exponent(v.data(), static_cast<int64_t>(v.size())); }

double max_abs(const double* v, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(v[i]));
  return m;
}

// float(v) of an int32 value (RNE), as the kernel converts its int32 accumulators and biases.
double to_fp32(double v) {
  return math::round_fast(DType::kF32, v, Rounding::kNearestEven);
}

// |fp32(v) - v| for an integer-valued accumulator v (exact below 2^24).
double fp32_conversion_error(double v) {
  return std::fabs(v) <= kTwo24 ? 0.0 : math::ulp_fast(DType::kF32, std::fabs(v)) / 2;
}

// The fp16 bit pattern of a double that is exactly an fp16 value (finite): sign, then the exponent
// and top 10 fraction bits of a normal, or the multiple of 2^-24 of a subnormal.
uint16_t f16_bits_of_exact(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  const auto sign = static_cast<uint16_t>((b >> 48) & 0x8000);
  const double a = std::fabs(v);
  if (a < 0x1p-14) return static_cast<uint16_t>(sign | static_cast<uint16_t>(a * 0x1p24));
  const auto exp = static_cast<uint16_t>(((b >> 52) & 0x7FF) - 1023 + 15);
  return static_cast<uint16_t>(sign | exp << 10 | ((b >> 42) & 0x3FF));
}

// Rows [row0, row0 + rows) all use expert `expert`.
struct Task {
  int64_t expert, row0, rows;
};

// Every input converted once to double, plus what the error budget needs.
struct Data {
  explicit Data(const Params& params)
      : p(params), path(path_of(params)), act(parse_activation(params.activation)), k(params.k1), n(params.n1) {}
  const Params& p;
  Path path;
  Activation act;
  int64_t k, n;
  std::vector<double> x, w1, w2, b1, b2, scale, offset, deq1, deq2;
  // The weights as the products read them: fp16 / bf16 patterns in place, else w1 and w2.
  Matrix w1m, w2m;
  std::vector<double> x_norm;   // [M]: |x[r, :]|_2
  std::vector<double> w1_norm;  // [E, N1]: |W1[e, :, n]|_2
  // Per expert, so that whether a sum is exact (and a value pinned) depends only on the data the
  // expert's rows use: [E] grids of x W1[e] + b1[e], W2[e], b2[e] and the largest |W2[e]|, |b2[e]|.
  std::vector<int> grid1, grid_w2, grid_b2;
  std::vector<double> w2_max, b2_max;
  // High-performance path at model sizes: activation_bound(act, v, 0, fp16) of every finite fp16
  // pattern (a pure function of the pattern, so a lookup returns exactly what a call would).
  std::vector<Tracked> half_act;
  std::vector<double> zeros;  // max(K1, N1) zeros: the bias of a call without bias1 / bias2
  double* y = nullptr;
  double* mag = nullptr;

  double bias1(int64_t e, int64_t j) const { return b1.empty() ? 0.0 : b1[static_cast<size_t>(e * n + j)]; }
  double bias2(int64_t e, int64_t j) const { return b2.empty() ? 0.0 : b2[static_cast<size_t>(e * k + j)]; }
  bool quant() const { return path == Path::kQuantF16 || path == Path::kQuantBF16; }
};

// fp paths: the hidden value a = act(h) and a bound on the device's hidden value (spec §2.7):
// high performance rounds h to fp16 (fixpipe, RNE) and evaluates the activation in half; high
// precision and bf16 evaluate it in fp32 and round a once (CAST_ROUND: ties away) to the hidden
// dtype. An exact chain is pinned to the device's value at each rounding (round_exact), so a
// rounding-mode change there moves a determined hidden value.
Tracked hidden_float(const Data& d, double h, double e_acc) {
  if (d.path == Path::kF16HighPerformance) {
    const Tracked h16 = round_exact({h, e_acc}, DType::kF16, Rounding::kNearestEven);
    if (h16.e == 0 && !d.half_act.empty()) return d.half_act[f16_bits_of_exact(h16.v)];
    return activation_bound(d.act, h16.v, h16.e, DType::kF16);
  }
  const Tracked a = activation_bound(d.act, h, e_acc, DType::kF32);
  return round_exact(a, d.path == Path::kBF16 ? DType::kBF16 : DType::kF16, Rounding::kHalfAway);
}

// fp32_exact_sum(grid, mag) for one grid, with 2^(24 + grid) computed once.
struct ExactSum {
  explicit ExactSum(int grid) : always(grid == kNoGrid), never(grid != kNoGrid && grid < -149) {
    if (!always && !never) {
      // The largest mag fp32_exact_sum accepts: 2^(24 + grid), or inf beyond double's range.
      limit = 24 + grid > 1023 ? std::numeric_limits<double>::infinity() : std::ldexp(1.0, 24 + grid);
    }
  }
  bool operator()(double mag) const { return always || (!never && mag <= limit); }
  bool always, never;
  double limit = 0;
};

// Scratch of one task, kept per thread across the tasks a thread runs (parallel_for's workers live
// for one call; the calling thread keeps its buffers across calls). Every element is written before
// it is read, so nothing is zeroed per task and the pages are touched once per thread.
std::vector<double>& scratch(int which, size_t size) {
  static thread_local std::vector<double> buffers[4];
  std::vector<double>& b = buffers[which];
  if (b.size() < size) b.resize(size);
  return b;
}

// The bound of mm1's fp32 accumulation of one hidden value, from cs >= sum_k |x W1| + |b1|:
// |x|_2 |W1 column|_2 + |b1| (Cauchy-Schwarz). Past kF32SafeMagnitude some order of mm1's fp32
// partial sums may overflow: no bound.
double mm1_bound(double cs, const ExactSum& mm1_exact, double mm1_coefficient) {
  return cs >= math::kF32SafeMagnitude ? std::numeric_limits<double>::infinity()
         : mm1_exact(cs)                ? 0.0
                                        : mm1_coefficient * cs;
}

// hidden_float's high-performance branch for fastgelu / silu over one row (ai: x W1 on entry, the
// hidden values on return; wi: their bounds), a row at a time through the lanes: h + b1 rounded to
// fp16, the values the table pins looked up, the others' activation bounds computed together.
// Returns whether every hidden value is exact.
bool hidden_row_lanes(const Data& d, const double* b1, const double* w1n, double xn, const ExactSum& mm1_exact,
                      double mm1_coefficient, double* ai, double* wi) {
  const int64_t n = d.n;
  static thread_local std::vector<double> hv, ev;
  static thread_local std::vector<int64_t> pending;
  static thread_local std::vector<Tracked> bounds;
  hv.resize(static_cast<size_t>(n));
  ev.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    hv[static_cast<size_t>(j)] = ai[j] + b1[j];
    ev[static_cast<size_t>(j)] = mm1_bound(xn * w1n[j] + std::fabs(b1[j]), mm1_exact, mm1_coefficient);
  }
  round_exact_f16(hv.data(), ev.data(), n, hv.data(), ev.data());
  bool exact = true;
  pending.clear();
  for (int64_t j = 0; j < n; ++j) {
    const auto u = static_cast<size_t>(j);
    if (ev[u] == 0 && !d.half_act.empty()) {
      const Tracked act = d.half_act[f16_bits_of_exact(hv[u])];
      ai[j] = act.v;
      wi[j] = act.e;
      exact = exact && act.e == 0;
      continue;
    }
    // Packed to the front (pending.size() <= j): the bounds take them in order.
    hv[pending.size()] = hv[u];
    ev[pending.size()] = ev[u];
    pending.push_back(j);
  }
  bounds.resize(pending.size());
  activation_bounds(d.act, hv.data(), ev.data(), static_cast<int64_t>(pending.size()), bounds.data());
  for (size_t q = 0; q < pending.size(); ++q) {
    ai[pending[q]] = bounds[q].v;
    wi[pending[q]] = bounds[q].e;
    exact = exact && bounds[q].e == 0;
  }
  return exact;
}

// fp paths. Budget of y[r, m] = sum_n |W2[n, m]| (e_a[n] + kappa (|a[n]| + e_a[n])) + kappa |b2[m]|
// with e_a the hidden bound and kappa the fp32 accumulation bound of mm2 (0 when exact).
void run_float_task(const Data& d, const Task& t) {
  const int64_t k = d.k, n = d.n, e = t.expert;
  const auto ue = static_cast<size_t>(e);
  double* a = scratch(0, static_cast<size_t>(t.rows * n)).data();
  double* weight = scratch(1, static_cast<size_t>(t.rows * n)).data();
  double* kappa = scratch(2, static_cast<size_t>(t.rows)).data();
  double* beyond = scratch(3, static_cast<size_t>(t.rows)).data();  // 1: the row may overflow fp32
  gemm_rows(d.x.data() + t.row0 * k, t.rows, k, d.w1m.at(e * k * n), n, a);
  // bias1(e, j) and |bias1(e, j)| (0 without bias1), the column norms and the per-expert constants.
  const double* b1 = d.b1.empty() ? d.zeros.data() : d.b1.data() + e * n;
  const double* w1n = d.w1_norm.data() + e * n;
  const ExactSum mm1_exact(d.grid1[ue]);
  // accumulation_bound(k, cs) = nu / (1 - nu) * cs, the same two operations in the same order.
  const double mm1_coefficient = accumulation_bound(k, 1.0);
  const double kap_inexact = accumulation_bound(n, 1.0);
  // High performance, fastgelu / silu: the hidden values a row at a time through the lanes.
  const bool lanes = d.path == Path::kF16HighPerformance && lanes_handle(d.act);
  for (int64_t i = 0; i < t.rows; ++i) {
    bool exact = true;
    const double xn = d.x_norm[static_cast<size_t>(t.row0 + i)];
    double* ai = a + i * n;
    double* wi = weight + i * n;
    if (lanes) exact = hidden_row_lanes(d, b1, w1n, xn, mm1_exact, mm1_coefficient, ai, wi);
    for (int64_t j = 0; !lanes && j < n; ++j) {
      const double h = ai[j] + b1[j];
      const double e_acc = mm1_bound(xn * w1n[j] + std::fabs(b1[j]), mm1_exact, mm1_coefficient);
      const Tracked act = hidden_float(d, h, e_acc);
      ai[j] = act.v;
      wi[j] = act.e;
      exact = exact && act.e == 0;
    }
    // mm2's fp32 partial sums stay finite in any order while sum_n |a W2| + |b2| < kF32SafeMagnitude
    // (bounded by sum |a| * max |W2| + max |b2|); past it the row is beyond the kernel's range.
    double row_abs = 0;
    for (int64_t j = 0; j < n; ++j) row_abs += std::fabs(ai[j]);
    // (Non-finite inputs keep their expected Inf or NaN, and the finite columns their bounds.)
    const double mm2_reach = row_abs * d.w2_max[ue] + d.b2_max[ue];
    beyond[i] = std::isfinite(mm2_reach) && mm2_reach >= math::kF32SafeMagnitude;
    // mm2 is exact in fp32 when the hidden row is exact and every partial sum fits 24 bits (the
    // grid and the sum of |a| only matter for an exact row).
    if (exact) {
      const int grid = std::min(product_grid(grid_exponent(ai, n), d.grid_w2[ue]), d.grid_b2[ue]);
      exact = fp32_exact_sum(grid, row_abs * d.w2_max[ue] + d.b2_max[ue]);
    }
    const double kap = exact ? 0.0 : kap_inexact;
    kappa[i] = kap;
    for (int64_t j = 0; j < n; ++j) wi[j] += kap * (std::fabs(ai[j]) + wi[j]);
  }
  double* y = d.y + t.row0 * k;
  double* mag = d.mag + t.row0 * k;
  gemm_rows(a, t.rows, n, d.w2m.at(e * n * k), k, y, weight, mag);
  const double* b2 = d.b2.empty() ? d.zeros.data() : d.b2.data() + e * k;
  for (int64_t i = 0; i < t.rows; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      y[i * k + j] += b2[j];
      mag[i * k + j] += kappa[i] * std::fabs(b2[j]);
    }
    // No bound: the reference declares these elements undefined (moe_ffn.cpp, beyond_range).
    if (beyond[i] != 0) std::fill_n(mag + i * k, k, std::numeric_limits<double>::infinity());
  }
}

// int8 -> fp16 hidden: the fixpipe rounds h (within h32.e of it after a possible fp32 step) to
// fp16 with RNE, then the activation runs in half. Exact: pinned to f16(h).
Tracked fixpipe_activation(Activation act, double h, Tracked h32) {
  const Tracked h16 = h32.e == 0 ? round_exact({h, 0.0}, DType::kF16, Rounding::kNearestEven)
                                 : Tracked{h, round_bound(h32, DType::kF16).e};
  return activation_bound(act, h16.v, h16.e, DType::kF16);
}

// int8 paths. The device's hidden value reaches AscendQuant through half arithmetic
// (t = f16(f16(a16 * f16(s)) + f16(o))), so aq may differ from sat8(rne(a s + o)) by as many steps
// as there are rounding boundaries within the bound of t. Budget of y[r, m] =
// deq2[m] * sum_n steps[n] |W2[n, m]| plus the fp32 conversions of the dequant.
void run_quant_task(const Data& d, const Task& t) {
  const int64_t k = d.k, n = d.n, e = t.expert;
  double* aq = scratch(0, static_cast<size_t>(t.rows * n)).data();
  double* steps = scratch(1, static_cast<size_t>(t.rows * n)).data();
  gemm_rows(d.x.data() + t.row0 * k, t.rows, k, d.w1m.at(e * k * n), n, aq);
  for (int64_t i = 0; i < t.rows; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const auto idx = static_cast<size_t>(i * n + j);
      const double deq = d.deq1[static_cast<size_t>(e * n + j)];
      // Spec §2.7: the int32 accumulator is converted to fp32 (RNE) before the dequant, so
      // h = float(acc1) * deq, exact in double (24 x 19 or 8 significant bits).
      const double h = to_fp32(aq[idx] + d.bias1(e, j)) * deq;
      // int8 -> fp16: fixpipe f16(h) (the bound also allows an intermediate fp32 rounding);
      // int8 -> bf16: AscendDequant f32(h), the fp32 activation, then a CAST_NONE (RNE) cast to
      // half. Exact chains are pinned to the device's values.
      Tracked a;
      if (d.path == Path::kQuantBF16) {
        const Tracked h32 = round_exact({h, 0.0}, DType::kF32, Rounding::kNearestEven);
        a = round_exact(activation_bound(d.act, h32.v, h32.e, DType::kF32), DType::kF16, Rounding::kNearestEven);
      } else {
        a = fixpipe_activation(d.act, h, round_bound({h, 0.0}, DType::kF32));
      }
      const double s = d.scale[static_cast<size_t>(d.p.per_channel_scale ? e * n + j : e)];
      const double o = d.offset[static_cast<size_t>(e)];
      const double s16 = math::round_fast(DType::kF16, s);
      const double o16 = math::round_fast(DType::kF16, o);
      // AscendQuant in half: t = f16(f16(a16 * f16(s)) + f16(o)). With every operand exact on the
      // device, t is determined and so is aq = sat8(rne(t)), ties included.
      const Tracked prod_dev = round_exact({a.v * s16, std::fabs(s16) * a.e}, DType::kF16, Rounding::kNearestEven);
      const Tracked t_exact = round_exact({prod_dev.v + o16, prod_dev.e}, DType::kF16, Rounding::kNearestEven);
      if (t_exact.e == 0) {
        aq[idx] = std::clamp(std::nearbyint(t_exact.v), -128.0, 127.0);
        steps[idx] = 0;
        continue;
      }
      const double q = a.v * s + o;
      const Tracked prod =
          round_bound({a.v * s, std::fabs(s16) * a.e + std::fabs(a.v) * std::fabs(s16 - s)}, DType::kF16);
      const Tracked t_dev = round_bound({q, prod.e + std::fabs(o16 - o)}, DType::kF16);
      aq[idx] = std::clamp(std::nearbyint(q), -128.0, 127.0);
      steps[idx] = static_cast<double>(requant_steps(q, t_dev.e));
    }
  }
  double* y = d.y + t.row0 * k;
  double* mag = d.mag + t.row0 * k;
  gemm_rows(aq, t.rows, n, d.w2m.at(e * n * k), k, y, steps, mag);
  for (int64_t i = 0; i < t.rows; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      const auto idx = static_cast<size_t>(i * k + j);
      const double flips = mag[idx];
      // With every aq determined (flips == 0) acc2 is known and so is float(acc2) (spec §2.7);
      // otherwise the device's acc2 is within flips of acc and its conversion adds half an ulp.
      const double acc = flips == 0 ? to_fp32(y[idx] + d.bias2(e, j)) : y[idx] + d.bias2(e, j);
      const double deq = d.deq2[static_cast<size_t>(e * k + j)];
      const double e_acc = flips == 0 ? 0.0 : flips + fp32_conversion_error(std::fabs(acc) + flips);
      // int8 -> bf16: AscendDequant rounds the fp32 product (RNE) before the bf16 cast, so an exact
      // acc pins y to f32(acc * deq). The fp16 fixpipe may round once, so its y stays exact.
      const Tracked out = d.path == Path::kQuantBF16
                              ? round_exact({acc * deq, e_acc * std::fabs(deq)}, DType::kF32, Rounding::kNearestEven)
                              : Tracked{acc * deq, round_bound({acc * deq, e_acc * std::fabs(deq)}, DType::kF32).e};
      y[idx] = out.v;
      mag[idx] = out.e;
    }
  }
}

// N1 = 0 (ProcessZeroN1): y = b2 cast to y's dtype (fp paths) or b2 * deq2 by the vector
// AscendDequant (int8 paths); rows of experts without bias2 are zero-filled.
void run_zero_hidden(const Data& d) {
  const std::vector<int64_t> offsets = expert_offsets(d.p.expert_tokens);
  for (size_t e = 0; e + 1 < offsets.size(); ++e) {
    const auto ei = static_cast<int64_t>(e);
    for (int64_t r = offsets[e]; r < offsets[e + 1]; ++r) {
      for (int64_t j = 0; j < d.k; ++j) {
        const double b = d.bias2(ei, j);
        if (!d.quant()) {
          // bf16: the fp32 bias is cast with CAST_ROUND (ties away), a determined value.
          d.y[r * d.k + j] = d.path == Path::kBF16 ? math::round_fast(DType::kBF16, b, Rounding::kHalfAway) : b;
          continue;
        }
        // The vector AscendDequant multiplies in fp32 (RNE) and then casts to y's dtype.
        const double deq = d.deq2[static_cast<size_t>(ei * d.k + j)];
        const Tracked out = round_exact({to_fp32(b) * deq, 0.0}, DType::kF32, Rounding::kNearestEven);
        d.y[r * d.k + j] = out.v;
        d.mag[r * d.k + j] = out.e;
      }
    }
  }
}

// grid_exponent and max_abs of fp16 / bf16 values from their bit patterns: the grid of each
// pattern's exact value (exact_half_values) in a table, and |value| ordered as the patterns with
// the sign cleared (NaN patterns, above the infinity's, are skipped as max_abs skips NaN).
struct HalfStats {
  static constexpr int16_t kNone = INT16_MAX;  // zero, infinity, NaN: no grid
  explicit HalfStats(bool bf16) : values(math::exact_half_values(bf16)), grids(65536),
        infinity(bf16 ? 0x7F80 : 0x7C00), floor(bf16 ? -133 : -24) {
    for (uint32_t b = 0; b < 65536; ++b) {
      const int g = grid_exponent(values + b, 1);
      grids[b] = g == kNoGrid ? kNone : static_cast<int16_t>(g);
    }
  }
  static const HalfStats& of(bool bf16) {
    static const HalfStats f16(false), bf(true);
    return bf16 ? bf : f16;
  }
  int grid(const uint16_t* h, int64_t n) const {
    int16_t m = kNone;
    for (int64_t i = 0; i < n; ++i) m = std::min(m, grids[h[i]]);
    return m == kNone ? kNoGrid : m;
  }
  double max_abs(const uint16_t* h, int64_t n) const {
    uint16_t m = 0;
    for (int64_t i = 0; i < n; ++i) {
      const auto a = static_cast<uint16_t>(h[i] & 0x7FFF);
      m = a <= infinity && a > m ? a : m;
    }
    return values[m];
  }
  const double* values;
  std::vector<int16_t> grids;
  uint16_t infinity;
  int floor;  // every value of the format is a multiple of 2^floor
};

// Row norms, column norms and grids; rows and experts over the threads (each sum is one thread's,
// in the same order as a serial loop).
void prepare_float(Data& d, int64_t e_n) {
  const int64_t m = d.p.m, k = d.k, n = d.n;
  d.x_norm.assign(static_cast<size_t>(m), 0.0);
  math::parallel_for(m, [&](int64_t r) {
    double s = 0;
    for (int64_t j = 0; j < k; ++j) s += d.x[static_cast<size_t>(r * k + j)] * d.x[static_cast<size_t>(r * k + j)];
    d.x_norm[static_cast<size_t>(r)] = std::sqrt(s);
  }, 64);
  d.w1_norm.assign(static_cast<size_t>(e_n * n), 0.0);
  const int grid_x = grid_of(d.x);
  // A slice of an optional per-expert tensor; empty (nullptr, 0) when the tensor is absent.
  const auto slice = [](const std::vector<double>& v, int64_t e, int64_t len) {
    return v.empty() ? std::pair<const double*, int64_t>{nullptr, 0} : std::pair{v.data() + e * len, len};
  };
  const auto ue_n = static_cast<size_t>(e_n);
  d.grid1.assign(ue_n, 0);
  d.grid_w2.assign(ue_n, 0);
  d.grid_b2.assign(ue_n, 0);
  d.w2_max.assign(ue_n, 0.0);
  d.b2_max.assign(ue_n, 0.0);
  math::parallel_for(e_n, [&](int64_t e) {
    // Row by row (the weights stay fp16 / bf16): the column sums keep the order of i, and grids
    // and maxima are minima and maxima over rows. fp16 / bf16 weights take grids and maxima from
    // their bit patterns (HalfStats: the same values), and a grid at the format's floor cannot
    // go lower, so the remaining rows' grids are not needed.
    std::vector<double> buf(static_cast<size_t>(std::max(k, n)));
    double* dst = d.w1_norm.data() + e * n;
    int grid_w1 = kNoGrid;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t first = (e * k + i) * n;
      const double* row = d.w1m.row(first, n, buf.data());
      for (int64_t j = 0; j < n; ++j) dst[j] += row[j] * row[j];
      if (d.w1m.halves == nullptr) {
        grid_w1 = std::min(grid_w1, grid_exponent(row, n));
      } else if (grid_w1 > HalfStats::of(d.w1m.bf16).floor) {
        grid_w1 = std::min(grid_w1, HalfStats::of(d.w1m.bf16).grid(d.w1m.halves + first, n));
      }
    }
    for (int64_t j = 0; j < n; ++j) dst[j] = std::sqrt(dst[j]);
    int grid_w2 = kNoGrid;
    double w2_max = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t first = (e * n + i) * k;
      if (d.w2m.halves == nullptr) {
        const double* row = d.w2m.row(first, k, buf.data());
        grid_w2 = std::min(grid_w2, grid_exponent(row, k));
        w2_max = std::max(w2_max, max_abs(row, k));
        continue;
      }
      const HalfStats& hs = HalfStats::of(d.w2m.bf16);
      if (grid_w2 > hs.floor) grid_w2 = std::min(grid_w2, hs.grid(d.w2m.halves + first, k));
      w2_max = std::max(w2_max, hs.max_abs(d.w2m.halves + first, k));
    }
    const auto [b1, b1_len] = slice(d.b1, e, n);
    const auto [b2, b2_len] = slice(d.b2, e, k);
    const auto ue = static_cast<size_t>(e);
    d.grid1[ue] = std::min(product_grid(grid_x, grid_w1), grid_exponent(b1, b1_len));
    d.grid_w2[ue] = grid_w2;
    d.grid_b2[ue] = grid_exponent(b2, b2_len);
    d.w2_max[ue] = w2_max;
    d.b2_max[ue] = max_abs(b2, b2_len);
  });
}

}  // namespace

void forward(const Params& p, const TensorMap& in, Tensor& y, Tensor& magnitude) {
  const int64_t e_n = num_experts(p);
  Data d(p);
  d.x = values_of(in.at("x"));
  for (const auto& [name, dst, m] : {std::tuple{"weight1", &d.w1, &d.w1m}, std::tuple{"weight2", &d.w2, &d.w2m}}) {
    const Tensor& t = in.at(name);
    if (t.dtype() == DType::kF16 || t.dtype() == DType::kBF16) {
      *m = Matrix{nullptr, t.ptr<uint16_t>(), t.dtype() == DType::kBF16};
    } else {
      *dst = values_of(t);
      *m = Matrix{dst->data(), nullptr, false};
    }
  }
  if (p.has_bias1) d.b1 = values_of(in.at("bias1"));
  if (p.has_bias2) d.b2 = values_of(in.at("bias2"));
  if (d.quant()) {
    d.scale = values_of(in.at("scale"));
    d.offset = values_of(in.at("offset"));
    // The cube's fixpipe keeps 19 bits of a UINT64/INT64/FLOAT32 deqScale; the N1 = 0 vector
    // dequant (AscendDequant, ascend_dequant_common_impl.h CastDeqscale) keeps all 32.
    const bool truncate = d.path == Path::kQuantF16 && p.n1 > 0;
    for (const auto& [name, dst] : {std::pair{"deqScale1", &d.deq1}, std::pair{"deqScale2", &d.deq2}}) {
      const Tensor& t = in.at(name);
      dst->resize(static_cast<size_t>(t.numel()));
      for (int64_t i = 0; i < t.numel(); ++i) (*dst)[static_cast<size_t>(i)] = deq_value(t, i, truncate);
    }
  }
  d.y = y.ptr<double>();
  d.mag = magnitude.ptr<double>();
  // y and magnitude come uninitialised: the zero-hidden path and rows no expert covers (a sum of
  // expertTokens below M, which validate rejects) start from zeros; the tasks write every other
  // element.
  const std::vector<int64_t> offsets = expert_offsets(p.expert_tokens);
  if (p.n1 == 0 || p.k1 == 0) {
    std::fill_n(d.y, p.m * p.k1, 0.0);
    std::fill_n(d.mag, p.m * p.k1, 0.0);
    run_zero_hidden(d);
    return;
  }
  const int64_t covered = std::min(offsets.back(), p.m);
  std::fill(d.y + covered * p.k1, d.y + p.m * p.k1, 0.0);
  std::fill(d.mag + covered * p.k1, d.mag + p.m * p.k1, 0.0);
  d.zeros.assign(static_cast<size_t>(std::max(p.k1, p.n1)), 0.0);
  if (!d.quant()) prepare_float(d, e_n);
  if (d.path == Path::kF16HighPerformance && p.m * p.n1 >= kHalfTableMinElements) {
    const double* halves = math::exact_half_values(false);
    d.half_act.resize(65536);
    math::parallel_for(64, [&](int64_t b) {
      for (int64_t i = b * 1024; i < (b + 1) * 1024; ++i) {
        const double v = halves[i];
        if (std::isfinite(v)) d.half_act[static_cast<size_t>(i)] = activation_bound(d.act, v, 0.0, DType::kF16);
      }
    });
  }
  std::vector<Task> tasks;
  for (int64_t e = 0; e < e_n; ++e) {
    const int64_t end = offsets[static_cast<size_t>(e + 1)];
    for (int64_t r = offsets[static_cast<size_t>(e)]; r < end; r += kRowBlock) {
      tasks.push_back({e, r, std::min(kRowBlock, end - r)});
    }
  }
  math::parallel_for(static_cast<int64_t>(tasks.size()), [&](int64_t i) {
    if (d.quant()) {
      run_quant_task(d, tasks[static_cast<size_t>(i)]);
    } else {
      run_float_task(d, tasks[static_cast<size_t>(i)]);
    }
  });
}

}  // namespace opgate::ref::moe_ffn
