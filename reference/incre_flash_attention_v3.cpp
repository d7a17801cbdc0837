// Double-precision reference of aclnnIncreFlashAttentionV3 (attention-and-ffn.md §1.4.1, §1.4.2,
// §1.4.5, §1.5): two-pass softmax per (batch, query head) on canonical BNSD data, never the online
// recurrence, parallel over (batch, KV head) only. Also the descriptors of the call (§1.2, §1.3),
// the data checks and the first-order error budget each output element's tolerance needs.
#include "reference/incre_flash_attention_v3.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "reference/math/ifa_convert.h"
#include "reference/math/ifa_parallel.h"

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
  const Params& p;
  int64_t n, n2, g, d, cap;
  std::vector<int64_t> lengths;
  std::vector<double> q, pse;
  const uint8_t* mask = nullptr;
  Antiquant aq;
  std::vector<double> qscale, qoffset;  // per query channel n*D + d
  double scale = 1;
  const Tensor* key = nullptr;
  const Tensor* value = nullptr;
  double* expected = nullptr;
  double* magnitude = nullptr;
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
  s.expected[flat] = std::clamp(x, -128.0, 127.0);
  // |s| * budget, then the fp16 roundings of o, s, o*s, off and the sum (per-tensor half
  // arithmetic; the per-channel fp32 path with one f16a rounding is covered by it) and fp32.
  const double quant = std::fabs(sc) * budget +
                       kU16 * (3 * std::fabs(o * sc) + std::fabs(off) + std::fabs(x)) +
                       2 * kU32 * (std::fabs(o * sc) + std::fabs(x));
  s.magnitude[flat] = quant / kU32;
}

void compute_group(const Shared& s, int64_t b, int64_t n2) {
  const Params& p = s.p;
  const int64_t len = s.lengths[static_cast<size_t>(b)];
  const int64_t dd = s.d;
  if (len == 0) {
    for (int64_t g = 0; g < s.g; ++g) {
      for (int64_t d = 0; d < dd; ++d) write_output(s, n2 * s.g + g, d, 0.0, 0.0, b);
    }
    return;
  }
  const bool int8_kv = p.kv_dtype == DType::kI8;
  const size_t row0 = static_cast<size_t>(n2 * dd);
  // K and V rows (dequantized), and for int8 the raw |k| sums and |v * sv|.
  std::vector<double> k(static_cast<size_t>(len * dd)), v(k.size()), vabs(k.size());
  const int64_t base = (b * s.n2 + n2) * s.cap * dd;
  ifa_math::to_double(p.kv_dtype, s.key->data(), base, len * dd, k.data());
  ifa_math::to_double(p.kv_dtype, s.value->data(), base, len * dd, v.data());
  std::vector<double> kabs_sum(static_cast<size_t>(len), 0.0);
  for (int64_t t = 0; t < len; ++t) {
    for (int64_t d = 0; d < dd; ++d) {
      const size_t i = static_cast<size_t>(t * dd + d);
      const size_t c = row0 + static_cast<size_t>(d);
      kabs_sum[static_cast<size_t>(t)] += std::fabs(k[i]);
      vabs[i] = std::fabs(v[i] * s.aq.value_scale[c]);
      if (int8_kv) {
        k[i] = (k[i] + s.aq.key_offset[c]) * s.aq.key_scale[c];
        v[i] = (v[i] + s.aq.value_offset[c]) * s.aq.value_scale[c];
      }
    }
  }
  // Tiles and flash-decode splits a kernel may use (tiles >= 512 positions, §1.4.7), and the
  // depth of its fp32 PV / row-sum accumulation (16-element cube steps, then tiles and splits).
  const double tiles = 2.0 * static_cast<double>(ceil_div(len, 512)) + 2;
  const double depth = static_cast<double>(ceil_div(len, 16)) + 16 + tiles;
  const double u_p = int8_kv ? 0.0 : (p.kv_dtype == DType::kF16 ? 0x1p-11 : 0x1p-8);
  const double coef = u_p + kU32 * (2 * depth + tiles + 12);
  const double eps_msd = int8_kv ? msd_step(p.inner_precise) : 0.0;

  std::vector<double> score(static_cast<size_t>(len)), sigma(score.size()), delta(score.size());
  std::vector<double> msd(score.size(), 0.0);
  std::vector<double> prob(score.size()), acc(static_cast<size_t>(dd));
  std::vector<double> cond(acc.size()), weighted(acc.size()), tail(acc.size());
  std::vector<char> masked(score.size(), 0);
  for (int64_t g = 0; g < s.g; ++g) {
    const int64_t n = n2 * s.g + g;
    const double* q = s.q.data() + (b * s.n + n) * dd;
    // Key-side constants of the int8 path: A_d = q_d * sk_d, the offset term the kernel drops
    // (the same for every t) and max |A_d| for the MSD digits of A.
    double dropped = 0, amax = 0;
    std::vector<double> a(static_cast<size_t>(dd));
    for (int64_t d = 0; d < dd; ++d) {
      const size_t c = row0 + static_cast<size_t>(d);
      a[static_cast<size_t>(d)] = q[d] * s.aq.key_scale[c];
      dropped += a[static_cast<size_t>(d)] * s.aq.key_offset[c];
      amax = std::max(amax, std::fabs(a[static_cast<size_t>(d)]));
    }
    dropped = std::fabs(s.scale * dropped);
    const double pse_base = s.pse.empty() ? 0 : ((p.pse_batch == p.batch ? b : 0) * s.n + n) * p.pse_seq;
    double m = -INFINITY;
    for (int64_t t = 0; t < len; ++t) {
      const double* kt = k.data() + t * dd;
      double dot = 0, mag = 0;
      for (int64_t d = 0; d < dd; ++d) {
        dot += q[d] * kt[d];
        mag += std::fabs(q[d] * kt[d]);
      }
      double st = s.scale * dot;
      const double pse = s.pse.empty() ? 0.0 : s.pse[static_cast<size_t>(pse_base + t)];
      st += pse;
      const size_t ti = static_cast<size_t>(t);
      masked[ti] = s.mask != nullptr && s.mask[b * p.mask_seq + t] != 0;
      if (masked[ti]) st = kMaskedScore;
      score[ti] = st;
      // int8: the kernel's dot product is sum_d A_d k_td (offset dropped), bounded by amax sum|k|.
      const double kmag = int8_kv ? mag + amax * kabs_sum[ti] : mag;
      sigma[ti] = std::fabs(s.scale) * kmag + std::fabs(pse);
      msd[ti] = std::fabs(s.scale) * eps_msd * amax * kabs_sum[ti];
      m = std::max(m, st);
    }
    double l = 0;
    for (int64_t t = 0; t < len; ++t) {
      const size_t ti = static_cast<size_t>(t);
      prob[ti] = std::exp(score[ti] - m);
      l += prob[ti];
      // Score error: dot product over D, scale, pse add, and the int8 MSD digits of A; exp error:
      // s - m, the exp itself, tile rescales and split combination.
      const double score_err = masked[ti] ? 0.0 : (dd + 4) * sigma[ti] + 3 * (std::fabs(score[ti]) + dropped);
      delta[ti] = kU32 * (score_err + 2 * std::fabs(score[ti] - m) + 2 * tiles + 10) + (masked[ti] ? 0.0 : msd[ti]);
    }
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t t = 0; t < len; ++t) {
      const double pt = prob[static_cast<size_t>(t)];
      const double* vt = v.data() + t * dd;
      for (int64_t d = 0; d < dd; ++d) acc[static_cast<size_t>(d)] += pt * vt[d];
    }
    for (int64_t d = 0; d < dd; ++d) acc[static_cast<size_t>(d)] /= l;
    std::fill(cond.begin(), cond.end(), 0.0);
    std::fill(weighted.begin(), weighted.end(), 0.0);
    std::fill(tail.begin(), tail.end(), 0.0);
    for (int64_t t = 0; t < len; ++t) {
      const size_t ti = static_cast<size_t>(t);
      const double w = prob[ti] / l;
      const double floor_p = int8_kv ? std::min(prob[ti], eps_msd)
                                     : (p.kv_dtype == DType::kF16 && prob[ti] < kHalfMinNormal ? prob[ti] : 0.0);
      const double* vt = v.data() + t * dd;
      const double* at = vabs.data() + t * dd;
      for (int64_t d = 0; d < dd; ++d) {
        const size_t di = static_cast<size_t>(d);
        cond[di] += w * std::fabs(vt[d] - acc[di]) * delta[ti];
        weighted[di] += w * at[d];
        tail[di] += floor_p * at[d];
      }
    }
    for (int64_t d = 0; d < dd; ++d) {
      const size_t di = static_cast<size_t>(d);
      const size_t c = row0 + di;
      const double off = int8_kv ? std::fabs(s.aq.value_offset[c] * s.aq.value_scale[c]) : 0.0;
      const double budget = cond[di] + coef * (weighted[di] + off) + tail[di] / l;
      write_output(s, n, d, acc[di], budget, b);
    }
  }
}

}  // namespace

RefOutputs reference(const Params& p, const TensorMap& in) {
  const SpecMap sp = specs(p);
  const Shape out_shape = sp.at("attentionOut").shape;
  Tensor expected = Tensor::zeros(DType::kF64, out_shape);
  Tensor magnitude = Tensor::zeros(DType::kF64, out_shape);
  Shared s{p, p.num_heads, kv_heads(p), group_size(p), p.head_dim, kv_capacity(p), effective_lengths(p)};
  const Tensor& query = in.at("query");
  s.q.resize(static_cast<size_t>(query.numel()));
  ifa_math::to_double(query.dtype(), query.data(), 0, query.numel(), s.q.data());
  if (p.has_pse && p.pse_seq > 0) {
    const Tensor& pse = in.at("pseShift");
    s.pse.resize(static_cast<size_t>(pse.numel()));
    ifa_math::to_double(pse.dtype(), pse.data(), 0, pse.numel(), s.pse.data());
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
  ifa_math::parallel_for(p.batch * s.n2, [&](int64_t job) { compute_group(s, job / s.n2, job % s.n2); });
  RefOutputs out;
  out.expected["attentionOut"] = std::move(expected);
  out.magnitude["attentionOut"] = std::move(magnitude);
  return out;
}

}  // namespace opgate::ref::incre_flash_attention_v3
