// Double-precision reference of aclnnIncreFlashAttentionV3 (attention-and-ffn.md §1.4.1, §1.4.2,
// §1.4.5, §1.5): two-pass softmax per (batch, query head) on canonical BNSD data, never the online
// recurrence, parallel over (batch, KV head) only. Also the descriptors of the call (§1.2, §1.3),
// the data checks and the first-order error budget each output element's tolerance needs.
#include "reference/incre_flash_attention_v3.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/parallel.h"
#include "reference/incre_flash_attention_v3/incre_flash_attention_v3_convert.h"
#include "reference/math/shared_attention.h"
#include "reference/math/shared_range.h"

namespace opgate::ref::incre_flash_attention_v3 {
namespace {

constexpr double kMaskedScore = -1.0e12;  // BOOL_ATTEN_MASK_SCALAR_VALUE (§1.4.1)
constexpr double kU32 = 0x1p-24;          // fp32 unit roundoff
constexpr double kU16 = 0x1p-11;          // fp16 unit roundoff (quantisation arithmetic, §1.4.5)
constexpr double kHalfMinNormal = 0x1p-14;  // below it a fp16 P may be subnormal or flushed

int64_t ceil_div(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }

// Absolute representation error of one MSD-decomposed value of magnitude <= amax, per unit of
// amax: 1 / (2 * 127 * 254^(digits-1)) (§1.4.2).
double msd_step(int64_t inner_precise) {
  return inner_precise == 0 ? 0.5 / (127.0 * 254.0 * 254.0) : 0.5 / (127.0 * 254.0);
}

// Per (n2, d) antiquant parameters broadcast from per-channel (2, N2*D) or per-tensor (2).
struct Antiquant {
  std::vector<double> key_scale, key_offset, value_scale, value_offset;
};

Antiquant antiquant_of(const Params& p, const TensorMap& in) {
  const int64_t hd = kv_heads(p) * p.head_dim;
  Antiquant a;
  a.key_scale.assign(static_cast<size_t>(hd), 1.0);
  a.value_scale = a.key_scale;
  a.key_offset.assign(static_cast<size_t>(hd), 0.0);
  a.value_offset = a.key_offset;
  if (p.antiquant == QuantMode::kNone) return a;
  const bool per_tensor = p.antiquant == QuantMode::kPerTensor;
  auto load = [&](const char* name, std::vector<double>& key, std::vector<double>& value) {
    const Tensor& t = in.at(name);
    for (int64_t c = 0; c < hd; ++c) {
      key[static_cast<size_t>(c)] = t.get(per_tensor ? 0 : c);
      value[static_cast<size_t>(c)] = t.get(per_tensor ? 1 : hd + c);
    }
  };
  load("antiquantScale", a.key_scale, a.value_scale);
  if (p.has_antiquant_offset) load("antiquantOffset", a.key_offset, a.value_offset);
  return a;
}

// Everything one (batch, KV head) job reads, converted once.
struct Shared {
  explicit Shared(const Params& params)
      : p(params), n(params.num_heads), n2(kv_heads(params)), g(group_size(params)), d(params.head_dim),
        cap(kv_capacity(params)), lengths(effective_lengths(params)) {}
  const Params& p;
  int64_t n, n2, g, d, cap;
  std::vector<int64_t> lengths;
  std::vector<KvWindow> windows;  // per batch; positions below are window-relative
  std::vector<double> q, pse;
  const uint8_t* mask = nullptr;
  Antiquant aq;
  std::vector<double> qscale, qoffset;  // per query channel n*D + d
  double scale = 1;
  const Tensor* key = nullptr;
  const Tensor* value = nullptr;
  double* expected = nullptr;
  double* magnitude = nullptr;
  uint8_t* care = nullptr;
};

// The output element and its magnitude (error budget in units of 2^-24) for row value o.
void write_output(const Shared& s, int64_t n, int64_t d, double o, double budget, int64_t b) {
  const int64_t flat = (b * s.n + n) * s.d + d;
  if (s.p.out_dtype != DType::kI8) {
    s.expected[flat] = o;
    s.magnitude[flat] = budget / kU32;
    return;
  }
  const size_t c = static_cast<size_t>(n * s.d + d);
  const double sc = s.qscale[c];
  const double off = s.qoffset[c];
  const double x = o * sc + off;
  const double clamped = std::clamp(x, -128.0, 127.0);
  s.expected[flat] = clamped;
  // |s| * budget, then the fp16 roundings of o, s, o*s, off and the sum (per-tensor half
  // arithmetic; the per-channel fp32 path with one f16a rounding is covered by it) and fp32.
  const double quant = std::fabs(sc) * budget +
                       kU16 * (3 * std::fabs(o * sc) + std::fabs(off) + std::fabs(x)) +
                       2 * kU32 * (std::fabs(o * sc) + std::fabs(x));
  s.magnitude[flat] = quant / kU32;
  if (!std::isfinite(x)) return;
  // The kernel returns sat8(round(x')) for an x' within acc of x: the int8 values between the
  // saturated ends. The allowance around clamp(x) shrinks to the part of [x - acc, x + acc] inside
  // the int8 range, so a saturated value is determined by the side x lies on (a huge quantScale2
  // no longer accepts every value); where that part spans the range the element is beyond it.
  const double acc = kBudgetFactor * quant;
  const double lo = std::max(x - acc, -128.0);
  const double hi = std::min(x + acc, 127.0);
  if (lo <= -127.5 && hi >= 126.5) {
    s.care[flat] = 0;
    s.magnitude[flat] = 0.0;
    return;
  }
  if (x - acc < -128.0 || x + acc > 127.0) s.magnitude[flat] = std::max({clamped - lo, hi - clamped, 0.0}) / kBudgetFactor / kU32;
}

// An L = 0 row: o = 0 exactly, so the int8 quantisation is determined and checked exactly (zero
// budget), including the §1.4.5 rounding decisions at ties: per-tensor AscendQuant on A2
// y = sat8(rne(f16(f16(0 * f16(s)) + f16(off)))) = sat8(rne(f16_rne(off))); per-channel fp32
// 0 * s + off = off, then y = sat8(i8a(f16a(off))).
void write_zero_row(const Shared& s, int64_t n, int64_t b) {
  for (int64_t d = 0; d < s.d; ++d) {
    const int64_t flat = (b * s.n + n) * s.d + d;
    s.magnitude[flat] = 0.0;
    if (s.p.out_dtype != DType::kI8) {
      s.expected[flat] = 0.0;
      continue;
    }
    const double off = s.qoffset[static_cast<size_t>(n * s.d + d)];
    const double sc = s.qscale[static_cast<size_t>(n * s.d + d)];
    // A per-tensor scale beyond fp16 (an fp32 quantScale2 near its maximum) is Inf in half, and
    // 0 * Inf is NaN, which the int8 conversion turns into 0 (the emulator's write).
    const bool nan_in_half = s.p.quant == QuantMode::kPerTensor && !std::isfinite(round_to(DType::kF16, sc, Rounding::kNearestEven));
    const double y = nan_in_half                          ? 0.0
                     : s.p.quant == QuantMode::kPerTensor ? std::nearbyint(round_to(DType::kF16, off, Rounding::kNearestEven))
                                                          : std::round(round_to(DType::kF16, off, Rounding::kHalfAway));
    s.expected[flat] = std::clamp(y, -128.0, 127.0);
  }
}

// Rows per kernel call. fp16/bf16 K and V are read in place (a tile of D = 128 rows is 16 KiB, so
// it stays in L1 while the kernels walk it column block by column block); int8 KV is dequantized
// into a double tile first.
constexpr int64_t kTile = 64;

// K or V rows of (b, n2) for positions [t0, t0 + count): the cache rows themselves (fp16/bf16), or
// dequantized doubles; for int8 KV also |v_int8 * sv| and sum_d |k_int8| for the error terms
// (float KV uses |v| and needs no key sums).
struct Tile {
  std::vector<double> x, abs, abs_sum;
  const void* rows = nullptr;
  math::RowType type = math::RowType::kF64;
};

void load_tile(const Shared& s, int64_t b, int64_t n2, int64_t t0, int64_t count, bool key, Tile& r) {
  const int64_t dd = s.d;
  const DType kv = s.p.kv_dtype;
  const int64_t base = ((b * s.n2 + n2) * s.cap + s.windows[static_cast<size_t>(b)].start + t0) * dd;
  const uint8_t* data = (key ? s.key : s.value)->data();
  if (kv == DType::kF16 || kv == DType::kBF16) {  // exact in registers (shared_attention.h)
    r.rows = reinterpret_cast<const uint16_t*>(data) + base;
    r.type = kv == DType::kF16 ? math::RowType::kF16 : math::RowType::kBF16;
    return;
  }
  r.x.resize(static_cast<size_t>(kTile * dd));
  r.rows = r.x.data();
  r.type = math::RowType::kF64;
  to_double(kv, data, base, count * dd, r.x.data());
  if (kv != DType::kI8) return;
  const size_t row0 = static_cast<size_t>(n2 * dd);
  const std::vector<double>& scale = key ? s.aq.key_scale : s.aq.value_scale;
  const std::vector<double>& offset = key ? s.aq.key_offset : s.aq.value_offset;
  r.abs.resize(r.x.size());
  r.abs_sum.assign(static_cast<size_t>(kTile), 0.0);
  for (int64_t t = 0; t < count; ++t) {
    for (int64_t d = 0; d < dd; ++d) {
      const size_t i = static_cast<size_t>(t * dd + d);
      const size_t c = row0 + static_cast<size_t>(d);
      if (key) {
        r.abs_sum[static_cast<size_t>(t)] += std::fabs(r.x[i]);
      } else {
        r.abs[i] = std::fabs(r.x[i] * scale[c]);
      }
      r.x[i] = (r.x[i] + offset[c]) * scale[c];
    }
  }
}

// Asks for the cache rows of the tile after [t0, t0 + count) while this one is computed: the
// kernels walk a tile column block by column block, a pattern the hardware prefetcher does not
// follow from memory.
void prefetch_next(const Tile& tile, int64_t count, int64_t next, int64_t d) {
  if (tile.type == math::RowType::kF64 || next <= 0) return;
  const char* start = static_cast<const char*>(tile.rows) + count * d * 2;
  const int64_t bytes = next * d * 2;
  for (int64_t i = 0; i < bytes; i += 64) __builtin_prefetch(start + i);
}

// Per query head of the group: the int8 key-side constants (A_d = q_d * sk_d, the dropped offset
// term |scale * sum_d A_d off_d| and max |A_d|), scores and the softmax.
struct Head {
  const double* q = nullptr;
  double dropped = 0, amax = 0, m = -INFINITY, l = 0;
  bool score_overflows = false;  // some fp32 score of the row may overflow (shared_range.h)
  std::vector<double> score, sigma, msd, prob, delta;
};

// The buffers of one (batch, KV head) job, kept per thread across the jobs of a call: fresh
// buffers of this size (L doubles per head and quantity) would page-fault on every job.
struct Workspace {
  std::vector<Head> heads;
  std::vector<char> masked, nonfinite, tail_rows;
  std::vector<double> dot, mag, o, cond, weighted, tail, pw, wdw, ww, fw;
  Tile tile;
};

Workspace& workspace() {
  thread_local Workspace ws;
  return ws;
}

// Dot products of the group's query heads with every key row (8-lane fixed order, shared_simd.h)
// give the scores, their magnitudes and the row maximum.
void score_pass(const Shared& s, int64_t b, int64_t n2, int64_t len, double eps_msd, std::vector<Head>& heads,
                std::vector<char>& masked) {
  const Params& p = s.p;
  const bool int8_kv = p.kv_dtype == DType::kI8;
  const math::AttentionKernels& kn = math::attention_kernels();
  const double* q = s.q.data() + (b * s.n + n2 * s.g) * s.d;
  const size_t gs = static_cast<size_t>(s.g);
  Workspace& ws = workspace();
  std::vector<double>& dot = ws.dot;
  std::vector<double>& mag = ws.mag;
  dot.resize(static_cast<size_t>(kTile) * gs);
  mag.resize(dot.size());
  const int64_t pb = p.pse_batch == p.batch ? b : 0;
  const int64_t aux = s.windows[static_cast<size_t>(b)].aux_start;
  Tile& tile = ws.tile;
  for (int64_t t0 = 0; t0 < len; t0 += kTile) {
    const int64_t count = std::min(kTile, len - t0);
    load_tile(s, b, n2, t0, count, true, tile);
    prefetch_next(tile, count, std::min(kTile, len - t0 - count), s.d);
    kn.scores(q, s.g, tile.rows, tile.type, count, s.d, dot.data(), mag.data());
    for (int64_t tt = 0; tt < count; ++tt) {
      const int64_t t = t0 + tt;
      const size_t ti = static_cast<size_t>(t);
      masked[ti] = s.mask != nullptr && s.mask[b * p.mask_seq + aux + t] != 0;
      const double kabs_sum = int8_kv ? tile.abs_sum[static_cast<size_t>(tt)] : 0.0;
      for (int64_t g = 0; g < s.g; ++g) {
        Head& h = heads[static_cast<size_t>(g)];
        const size_t k = static_cast<size_t>(tt) * gs + static_cast<size_t>(g);
        const double pse = s.pse.empty() ? 0.0 : s.pse[static_cast<size_t>((pb * s.n + n2 * s.g + g) * p.pse_seq + aux + t)];
        const double st = masked[ti] ? kMaskedScore : s.scale * dot[k] + pse;
        // int8: the kernel's dot product is sum_d A_d k_td (offset dropped), bounded by amax sum|k|.
        const double kmag = int8_kv ? mag[k] + h.amax * kabs_sum : mag[k];
        h.score[ti] = st;
        h.sigma[ti] = std::fabs(s.scale) * kmag + std::fabs(pse);
        h.msd[ti] = std::fabs(s.scale) * eps_msd * h.amax * kabs_sum;
        h.m = std::max(h.m, st);
        // q k accumulated in fp32, scaled before or after, plus pse: finite inputs only (Inf and
        // NaN ones keep their expected Inf or NaN).
        // int8 KV: the MSD digits scale each A_d by 127 / amax in fp32 and the recombined sum
        // is multiplied by amax before the / 127, so 127 (amax + kmag) bounds those steps.
        const double dot_reach = int8_kv ? 127.0 * (h.amax + kmag) : kmag;
        const double reach = std::max(1.0, std::fabs(s.scale)) * dot_reach + std::fabs(pse);
        h.score_overflows = h.score_overflows || (!masked[ti] && std::isfinite(reach) && reach >= math::kF32SafeMagnitude);
      }
    }
  }
}

// The first-order budget charges each weight p_t its relative error delta_t, and the factor
// kBudgetFactor = 2 covers e^delta - 1 only while delta <= 1.25 (2 * 1.25 = 2.5 >= e^1.25 - 1 =
// 2.49); past delta_t = 1 (e.g. scores of 1e5 and more, whose fp32 errors reach units, or MSD
// errors of hundreds) the kernel may weight the rows in almost any proportion. Positions that stay below e^-120 of the maximum
// whatever their error cannot move the output. For a head where a position that can matter has
// delta_t > 1, the conditioning term becomes the convex-hull bound: the output is a weighted
// mean of the V rows, so it lies within max_t |v_td - o_d| of the reference.
void hull_fallback(const Shared& s, int64_t b, int64_t n2, int64_t len, const std::vector<Head>& heads,
                   const std::vector<double>& o, std::vector<double>& cond) {
  const auto D = static_cast<size_t>(s.d);
  std::vector<char> loose(heads.size(), 0);
  bool any = false;
  for (size_t g = 0; g < heads.size(); ++g) {
    const Head& h = heads[g];
    for (int64_t t = 0; t < len && loose[g] == 0; ++t) {
      const double dt = h.delta[static_cast<size_t>(t)];
      loose[g] = dt > 1.0 && h.score[static_cast<size_t>(t)] - h.m > -(dt + 120) ? 1 : 0;
    }
    any = any || loose[g] != 0;
  }
  if (!any) return;
  Tile tile;
  std::vector<double> row(static_cast<size_t>(kTile) * D);
  for (int64_t t0 = 0; t0 < len; t0 += kTile) {
    const int64_t count = std::min(kTile, len - t0);
    load_tile(s, b, n2, t0, count, false, tile);
    const double* v = tile.x.data();
    if (tile.type != math::RowType::kF64) {  // fp16 / bf16 rows in place: their exact values
      const int64_t base = ((b * s.n2 + n2) * s.cap + s.windows[static_cast<size_t>(b)].start + t0) * s.d;
      to_double(s.p.kv_dtype, s.value->data(), base, count * s.d, row.data());
      v = row.data();
    }
    for (size_t g = 0; g < heads.size(); ++g) {
      if (loose[g] == 0) continue;
      for (int64_t tt = 0; tt < count; ++tt) {
        for (size_t d = 0; d < D; ++d) {
          const size_t i = g * D + d;
          if (tt == 0 && t0 == 0) cond[i] = 0;
          cond[i] = std::max(cond[i], std::fabs(v[static_cast<size_t>(tt) * D + d] - o[i]));
        }
      }
    }
  }
}

void compute_group(const Shared& s, int64_t b, int64_t n2) {
  const Params& p = s.p;
  const int64_t len = s.lengths[static_cast<size_t>(b)];
  const int64_t dd = s.d;
  if (len == 0) {
    for (int64_t g = 0; g < s.g; ++g) write_zero_row(s, n2 * s.g + g, b);
    return;
  }
  const bool int8_kv = p.kv_dtype == DType::kI8;
  const size_t row0 = static_cast<size_t>(n2 * dd);
  const math::AttentionKernels& kn = math::attention_kernels();
  // Tiles and flash-decode splits a kernel may use (tiles >= 512 positions, §1.4.7), and the
  // depth of its fp32 PV / row-sum accumulation (16-element cube steps, then tiles and splits).
  const double tiles = 2.0 * static_cast<double>(ceil_div(len, 512)) + 2;
  const double depth = static_cast<double>(ceil_div(len, 16)) + 16 + tiles;
  const double u_p = int8_kv ? 0.0 : (p.kv_dtype == DType::kF16 ? 0x1p-11 : 0x1p-8);
  const double coef = u_p + kU32 * (2 * depth + tiles + 12);
  const double eps_msd = int8_kv ? msd_step(p.inner_precise) : 0.0;
  const auto L = static_cast<size_t>(len);
  const auto D = static_cast<size_t>(dd);
  const auto G = static_cast<size_t>(s.g);

  Workspace& ws = workspace();
  std::vector<Head>& heads = ws.heads;
  heads.resize(G);
  for (int64_t g = 0; g < s.g; ++g) {
    Head& h = heads[static_cast<size_t>(g)];
    h.dropped = 0;
    h.amax = 0;
    h.m = -INFINITY;
    h.l = 0;
    h.score_overflows = false;
    h.q = s.q.data() + (b * s.n + n2 * s.g + g) * dd;
    for (int64_t d = 0; d < dd; ++d) {
      const size_t c = row0 + static_cast<size_t>(d);
      const double a = h.q[d] * s.aq.key_scale[c];
      h.dropped += a * s.aq.key_offset[c];
      h.amax = std::max(h.amax, std::fabs(a));
    }
    h.dropped = std::fabs(s.scale * h.dropped);
    for (auto* v : {&h.score, &h.sigma, &h.msd, &h.prob, &h.delta}) v->assign(L, 0.0);
  }
  std::vector<char>& masked = ws.masked;
  masked.assign(L, 0);
  score_pass(s, b, n2, len, eps_msd, heads, masked);
  for (Head& h : heads) {
    for (size_t t = 0; t < L; ++t) {
      h.prob[t] = std::exp(h.score[t] - h.m);
      h.l += h.prob[t];
      // Score error: dot product over D, scale, pse add, and the int8 MSD digits of A; exp error:
      // s - m, the exp itself, tile rescales and split combination.
      const double score_err = masked[t] ? 0.0 : (dd + 4) * h.sigma[t] + 3 * (std::fabs(h.score[t]) + h.dropped);
      h.delta[t] = kU32 * (score_err + 2 * std::fabs(h.score[t] - h.m) + 2 * tiles + 10) + (masked[t] ? 0.0 : h.msd[t]);
    }
  }
  // Per head g (row g of G x D): o_d = sum_t p_t v_td in order of t (one sum per column d), then / l.
  std::vector<double>&o = ws.o, &cond = ws.cond, &weighted = ws.weighted, &tail = ws.tail;
  for (auto* v : {&o, &cond, &weighted, &tail}) v->assign(G * D, 0.0);
  std::vector<double>&pw = ws.pw, &wdw = ws.wdw, &ww = ws.ww, &fw = ws.fw;
  for (auto* v : {&pw, &wdw, &ww, &fw}) v->resize(static_cast<size_t>(kTile) * G);
  // Rows holding an Inf or NaN value (fp16/bf16 KV, found by the PV pass): their tail terms f * |v|
  // are never skipped, since 0 * Inf is NaN.
  std::vector<char>&nonfinite = ws.nonfinite, &tail_rows = ws.tail_rows;
  nonfinite.assign(L, 0);
  tail_rows.assign(static_cast<size_t>(kTile), 1);
  Tile& tile = ws.tile;
  for (int64_t t0 = 0; t0 < len; t0 += kTile) {
    const int64_t count = std::min(kTile, len - t0);
    load_tile(s, b, n2, t0, count, false, tile);
    prefetch_next(tile, count, std::min(kTile, len - t0 - count), dd);
    for (int64_t tt = 0; tt < count; ++tt) {
      for (size_t g = 0; g < G; ++g) pw[static_cast<size_t>(tt) * G + g] = heads[g].prob[static_cast<size_t>(t0 + tt)];
    }
    char* flags = tile.type == math::RowType::kF64 ? nullptr : nonfinite.data() + t0;
    kn.weighted_rows(o.data(), s.g, pw.data(), tile.rows, tile.type, count, dd, flags);
  }
  for (size_t g = 0; g < G; ++g) {
    for (size_t d = 0; d < D; ++d) o[g * D + d] /= heads[g].l;
  }
  for (int64_t t0 = 0; t0 < len; t0 += kTile) {
    const int64_t count = std::min(kTile, len - t0);
    load_tile(s, b, n2, t0, count, false, tile);
    prefetch_next(tile, count, std::min(kTile, len - t0 - count), dd);
    for (int64_t tt = 0; tt < count; ++tt) {
      const size_t t = static_cast<size_t>(t0 + tt);
      bool any_floor = false;
      for (size_t g = 0; g < G; ++g) {
        const Head& h = heads[g];
        const size_t k = static_cast<size_t>(tt) * G + g;
        const double w = h.prob[t] / h.l;
        const double pt = h.prob[t];
        ww[k] = w;
        wdw[k] = w * h.delta[t];
        fw[k] = int8_kv ? std::min(pt, eps_msd) : (p.kv_dtype == DType::kF16 && pt < kHalfMinNormal ? pt : 0.0);
        any_floor = any_floor || fw[k] != 0.0;
      }
      tail_rows[static_cast<size_t>(tt)] = any_floor || nonfinite[t] != 0 ? 1 : 0;
    }
    // Float KV: a row whose f are all 0 and whose |v| are finite adds exact zeros to the tail.
    const char* with_tail = tile.type == math::RowType::kF64 ? nullptr : tail_rows.data();
    kn.deviation_rows(cond.data(), weighted.data(), tail.data(), o.data(), s.g, wdw.data(), ww.data(), fw.data(),
                      with_tail, tile.rows, tile.type, int8_kv ? tile.abs.data() : nullptr, count, dd);
  }
  hull_fallback(s, b, n2, len, heads, o, cond);
  for (size_t g = 0; g < G; ++g) {
    const Head& h = heads[g];
    for (size_t d = 0; d < D; ++d) {
      const size_t c = row0 + d;
      const size_t i = g * D + d;
      const double off = int8_kv ? std::fabs(s.aq.value_offset[c] * s.aq.value_scale[c]) : 0.0;
      const double budget = cond[i] + coef * (weighted[i] + off) + tail[i] / h.l;
      const int64_t head = n2 * s.g + static_cast<int64_t>(g);
      write_output(s, head, static_cast<int64_t>(d), o[i], budget, b);
      // Beyond the kernel's range: an fp32 score that may overflow (Inf - Inf in the softmax), or a
      // PV accumulation sum_t p_t v_td (p unnormalised, <= 1) whose |terms| reach kF32SafeMagnitude.
      const double pv_reach = h.l * weighted[i];
      if (h.score_overflows || (std::isfinite(pv_reach) && pv_reach >= math::kF32SafeMagnitude)) {
        const int64_t flat = (b * s.n + head) * s.d + static_cast<int64_t>(d);
        s.care[flat] = 0;
        s.magnitude[flat] = 0.0;
      }
    }
  }
}

}  // namespace

std::vector<KvWindow> full_windows(const Params& p) {
  std::vector<KvWindow> w;
  for (int64_t l : effective_lengths(p)) w.push_back({0, l, 0});
  return w;
}

RefOutputs reference(const Params& p, const TensorMap& in) { return reference_window(p, in, full_windows(p)); }

RefOutputs reference_window(const Params& p, const TensorMap& in, const std::vector<KvWindow>& windows) {
  OPGATE_CHECK(static_cast<int64_t>(windows.size()) == p.batch, "reference_window: one window per batch");
  const SpecMap sp = specs(p);
  const Shape out_shape = sp.at("attentionOut").shape;
  Tensor expected = Tensor::zeros(DType::kF64, out_shape);
  Tensor magnitude = Tensor::zeros(DType::kF64, out_shape);
  Shared s(p);
  s.windows = windows;
  for (size_t b = 0; b < windows.size(); ++b) s.lengths[b] = windows[b].length;
  const Tensor& query = in.at("query");
  s.q.resize(static_cast<size_t>(query.numel()));
  to_double(query.dtype(), query.data(), 0, query.numel(), s.q.data());
  if (p.has_pse && p.pse_seq > 0) {
    const Tensor& pse = in.at("pseShift");
    s.pse.resize(static_cast<size_t>(pse.numel()));
    to_double(pse.dtype(), pse.data(), 0, pse.numel(), s.pse.data());
  }
  if (p.has_mask && p.mask_seq > 0) s.mask = in.at("attenMask").data();
  s.aq = antiquant_of(p, in);
  const int64_t channels = p.num_heads * p.head_dim;
  s.qscale.assign(static_cast<size_t>(channels), 1.0);
  s.qoffset.assign(static_cast<size_t>(channels), 0.0);
  if (p.quant != QuantMode::kNone) {
    const bool per_tensor = p.quant == QuantMode::kPerTensor;
    for (int64_t c = 0; c < channels; ++c) {
      s.qscale[static_cast<size_t>(c)] = in.at("quantScale2").get(per_tensor ? 0 : c);
      if (p.has_quant_offset) s.qoffset[static_cast<size_t>(c)] = in.at("quantOffset2").get(per_tensor ? 0 : c);
    }
  }
  s.scale = static_cast<double>(f32_from_double(p.scale_value));
  s.key = &in.at("key");
  s.value = &in.at("value");
  s.expected = expected.ptr<double>();
  s.magnitude = magnitude.ptr<double>();
  Tensor care = Tensor::full(DType::kU8, out_shape, 1.0);
  s.care = care.ptr<uint8_t>();
  math::parallel_for(p.batch * s.n2, [&](int64_t job) { compute_group(s, job / s.n2, job % s.n2); });
  workspace() = Workspace{};  // the calling thread's buffers (the workers' end with them)
  RefOutputs out;
  if (const int64_t beyond = std::count(s.care, s.care + care.numel(), uint8_t{0}); beyond > 0) {
    out.care["attentionOut"] = std::move(care);
    out.beyond_range["attentionOut"] = {beyond, "an fp32 score q k (scaled, plus pse) or the fp32 sum of p v can "
                                                "overflow on the way (Inf or NaN are what a correct kernel may return), "
                                                "or an int8 output's bound spans the whole int8 range"};
  }
  out.expected["attentionOut"] = std::move(expected);
  out.magnitude["attentionOut"] = std::move(magnitude);
  return out;
}

}  // namespace opgate::ref::incre_flash_attention_v3
