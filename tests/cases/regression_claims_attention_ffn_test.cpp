// Claims of the regression cases of MoeFFN and IncreFlashAttentionV3 (issue 12): one predicate
// per case id over params and filled inputs, written from the case's `issue` text, or the reason
// it cannot be one.
#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "tests/cases/regression_claims.h"

namespace opgate::regression_claims {
namespace {
using Json = nlohmann::json;
}  // namespace

// ---------------------------------------------------------------------------------------------
// MoeFFN: x (M, K1), weight1 (E, K1, N1), bias1 (E, N1); tokens go to experts in the order of
// expertTokens.
namespace mffn {

std::vector<int64_t> tokens(const Filled& f) { return f.params.at("expertTokens").get<std::vector<int64_t>>(); }

// The expert of token t (prefix sums of expertTokens).
int64_t expert_of(const Filled& f, int64_t t) {
  const std::vector<int64_t> n = tokens(f);
  for (size_t e = 0; e < n.size(); ++e) {
    if (t < n[e]) return static_cast<int64_t>(e);
    t -= n[e];
  }
  return -1;
}

const std::map<std::string, Claim>& table() {
  static const std::map<std::string, Claim> c = {
      {"mffn.regress_zero_n1_vector_dequant.i8.001",
       {[](const Filled& f) {
          // int8, N1 = 0, bias2, and a deqScale2 whose fp32 bits use more than the fixpipe's 19
          // (sign, exponent, 10 mantissa bits): its low 13 mantissa bits are not all 0.
          if (f.params.at("dtype") != "int8" || f.integer("N1") != 0 || !f.flag("bias2")) return false;
          const Tensor& d = f.at("deqScale2");
          for (int64_t i = 0; i < d.numel(); ++i) {
            if ((d.bits(i) & 0x1FFFu) != 0) return true;
          }
          return false;
        }, ""}},
      {"mffn.regress_half_exp_overflow.f16.001",
       {[](const Filled& f) {
          // fp16 FasterGelu with some first-layer pre-activation h = x.W1 + b1 below -6.5
          // (exp(-1.702 h) overflows fp16 there); h computed here in double.
          if (f.params.at("dtype") != "float16" || f.params.at("activation") != "fastgelu") return false;
          const int64_t k1 = f.integer("K1"), n1 = f.integer("N1");
          const Tensor& x = f.at("x");
          const Tensor& w = f.at("weight1");
          for (int64_t t = 0; t < x.dim(0); ++t) {
            const int64_t e = expert_of(f, t);
            if (e < 0) continue;
            for (int64_t n = 0; n < n1; ++n) {
              double h = f.has("bias1") ? f.at("bias1").get(e * n1 + n) : 0.0;
              for (int64_t k = 0; k < k1; ++k) h += x.get(t * k1 + k) * w.get((e * k1 + k) * n1 + n);
              if (h < -6.5) return true;
            }
          }
          return false;
        }, ""}},
      {"mffn.regress_acc1_beyond_2p24.i8.001",
       {[](const Filled& f) {
          // Token 0 and weight1 column 0 of its expert are -128 throughout, and K1 * 128^2 > 2^24.
          const int64_t k1 = f.integer("K1"), n1 = f.integer("N1");
          const int64_t e = expert_of(f, 0);
          if (f.params.at("dtype") != "int8" || e < 0 || k1 * 16384 <= (int64_t{1} << 24)) return false;
          for (int64_t k = 0; k < k1; ++k) {
            if (f.at("x").get(k) != -128 || f.at("weight1").get((e * k1 + k) * n1) != -128) return false;
          }
          return true;
        }, ""}},
      {"mffn.regress_ties_in_exact_chain.i8.001",
       {nullptr,
        "the tie is in the kernel's intermediate a*scale + offset after the first GEMM, dequant and "
        "activation; stating it needs that numeric chain, i.e. the reference under test"}},
      {"mffn.regress_leading_empty_experts.f16.001",
       {[](const Filled& f) {
          // The first expert has no tokens, and some expert without tokens lies between two with.
          const std::vector<int64_t> n = tokens(f);
          if (n.empty() || n[0] != 0) return false;
          for (size_t e = 1; e + 1 < n.size(); ++e) {
            bool before = false, after = false;
            for (size_t i = 0; i < e; ++i) before = before || n[i] > 0;
            for (size_t i = e + 1; i < n.size(); ++i) after = after || n[i] > 0;
            if (n[e] == 0 && before && after) return true;
          }
          return false;
        }, ""}},
  };
  return c;
}

}  // namespace mffn

const std::map<std::string, Claim>& mffn_claims() { return mffn::table(); }

// ---------------------------------------------------------------------------------------------
// IncreFlashAttentionV3 in the canonical view: query (B, N, 1, D), key/value (B, N2, cap, D),
// attenMask (B, maskS), quantScale2/quantOffset2 (N*D) per channel; L_b = actualSeqLengths[b]
// (S, or the list's kvSeqLens[b], without it).
namespace ifa {

int64_t batch(const Filled& f) { return f.integer("B"); }
int64_t heads(const Filled& f) { return f.integer("numHeads"); }
int64_t kv_heads(const Filled& f) {
  const int64_t n2 = f.integer("numKeyValueHeads");
  return n2 == 0 ? heads(f) : n2;
}

std::vector<int64_t> lengths(const Filled& f) {
  std::vector<int64_t> l;
  const Json& asl = f.params.at("actualSeqLengths");
  for (int64_t b = 0; b < batch(f); ++b) {
    if (asl.is_array() && static_cast<int64_t>(asl.size()) > b) {
      l.push_back(asl[static_cast<size_t>(b)].get<int64_t>());
    } else if (f.params.contains("kvSeqLens")) {
      l.push_back(f.params.at("kvSeqLens")[static_cast<size_t>(b)].get<int64_t>());
    } else {
      l.push_back(f.integer("S"));
    }
  }
  return l;
}

int64_t max_length(const Filled& f) {
  int64_t m = 0;
  for (int64_t l : lengths(f)) m = std::max(m, l);
  return m;
}

int64_t mask_seq(const Filled& f) { return f.at("attenMask").shape().back(); }

const std::map<std::string, Claim>& table() {
  static const std::map<std::string, Claim> c = {
      {"ifa.fully_masked_mean_of_v.bf16.001",
       {[](const Filled& f) {
          // Some batch whose mask masks every position below L_b (and L_b > 0).
          if (!f.has("attenMask")) return false;
          const std::vector<int64_t> l = lengths(f);
          for (int64_t b = 0; b < batch(f); ++b) {
            bool all = l[static_cast<size_t>(b)] > 0;
            for (int64_t t = 0; t < l[static_cast<size_t>(b)]; ++t) {
              all = all && f.at("attenMask").get(b * mask_seq(f) + t) != 0;
            }
            if (all) return true;
          }
          return false;
        }, ""}},
      {"ifa.zero_length_int8_out_is_offset.f16.001",
       {[](const Filled& f) {
          // int8 output, a batch of length 0, and a non-zero quantOffset2 (so 0 and the offset differ).
          if (f.params.at("outDtype") != "int8" || !f.has("quantOffset2")) return false;
          bool zero_length = false;
          for (int64_t l : lengths(f)) zero_length = zero_length || l == 0;
          bool offset = false;
          for (int64_t i = 0; i < f.at("quantOffset2").numel(); ++i) {
            offset = offset || std::nearbyint(f.at("quantOffset2").get(i)) != 0;
          }
          return zero_length && offset;
        }, ""}},
      {"ifa.quant_scale_by_query_head.f16.001",
       {[](const Filled& f) {
          // GQA (N > N2), per-channel quantScale2 with N*D entries, and two query heads of one kv
          // group with different scales (indexing by the kv head would show).
          const int64_t n = heads(f), n2 = kv_heads(f), d = f.integer("D");
          if (n <= n2 || !f.has("quantScale2") || f.at("quantScale2").numel() != n * d) return false;
          const int64_t g = n / n2;
          for (int64_t h = 0; h < n; ++h) {
            for (int64_t i = 0; i < d; ++i) {
              if (f.at("quantScale2").get(h * d + i) != f.at("quantScale2").get((h / g * g) * d + i)) return true;
            }
          }
          return false;
        }, ""}},
      {"ifa.scale_then_pse.f16.001",
       {[](const Filled& f) {
          // scaleValue != 1 and a non-zero pse, so scaling pse or not differs.
          if (f.params.at("scaleValue").get<double>() == 1.0 || !f.has("pseShift")) return false;
          for (int64_t i = 0; i < f.at("pseShift").numel(); ++i) {
            if (f.at("pseShift").get(i) != 0) return true;
          }
          return false;
        }, ""}},
      {"ifa.mask_last_dim_max_len.bf16.001",
       {[](const Filled& f) {
          // No page attention; the mask's last dim covers max L but not S.
          return f.params.at("kvCache") == "tensor" && f.has("attenMask") && mask_seq(f) >= max_length(f) &&
                 mask_seq(f) < f.integer("S");
        }, ""}},
      {"ifa.paged_mask_covers_table.f16.001",
       {[](const Filled& f) {
          // Page attention with mask and pse as long as the block table (maxBlockNumPerSeq *
          // blockSize), which is more than any L_b.
          const std::string cache = f.params.at("kvCache").get<std::string>();
          if (cache.rfind("paged", 0) != 0 || !f.has("attenMask") || !f.has("pseShift")) return false;
          const int64_t table = f.integer("maxBlockNumPerSeq") * f.integer("blockSize");
          return mask_seq(f) == table && f.at("pseShift").shape().back() == table && table > max_length(f);
        }, ""}},
      {"ifa.ties_cancelling_values.f16.001",
       {[](const Filled& f) {
          // Some (b, n2) with an even L_b > 0 whose keys are all equal over [0, L_b) and whose values
          // sum to 0 in every channel.
          const int64_t n2s = kv_heads(f), d = f.integer("D");
          const Tensor& k = f.at("key");
          const Tensor& v = f.at("value");
          const int64_t cap = k.dim(2);
          const std::vector<int64_t> l = lengths(f);
          for (int64_t b = 0; b < batch(f); ++b) {
            const int64_t len = l[static_cast<size_t>(b)];
            if (len <= 0 || len % 2 != 0) continue;
            for (int64_t n2 = 0; n2 < n2s; ++n2) {
              const int64_t base = (b * n2s + n2) * cap * d;
              bool tied = true, cancel = true;
              for (int64_t i = 0; i < d; ++i) {
                double sum = 0;
                for (int64_t t = 0; t < len; ++t) {
                  tied = tied && k.get(base + t * d + i) == k.get(base + i);
                  sum += v.get(base + t * d + i);
                }
                cancel = cancel && sum == 0;
              }
              if (tied && cancel) return true;
            }
          }
          return false;
        }, ""}},
      {"ifa.regress_balance_wide_bound.f16.001",
       {[](const Filled& f) {
          // Scores that can reach ~1e5 (max|q| max|k| D scale), so their fp32 ulp moves exp by
          // percents and the convex-hull bound applies. (The claim sees the operator's fill; the
          // case's subnormal keys are a fill override applied by the runner on top of it.)
          auto max_abs = [](const Tensor& t) {
            double m = 0;
            for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(t.get(i)));
            return m;
          };
          const double reach = max_abs(f.at("query")) * max_abs(f.at("key")) *
                               static_cast<double>(f.integer("D")) * f.params.at("scaleValue").get<double>();
          return reach >= 1e5;
        }, ""}},
      {"ifa.extra_lengths_ignored.bf16.001",
       {[](const Filled& f) {
          // actualSeqLengths longer than B, with an entry past B that would be invalid if read.
          const Json& asl = f.params.at("actualSeqLengths");
          if (!asl.is_array()) return false;
          int64_t cap = 0;
          for (const auto& s : f.params.at("kvSeqLens")) cap = std::max(cap, s.get<int64_t>());
          for (size_t b = static_cast<size_t>(batch(f)); b < asl.size(); ++b) {
            const int64_t l = asl[b].get<int64_t>();
            if (l < 0 || l > cap) return true;
          }
          return false;
        }, ""}},
  };
  return c;
}

}  // namespace ifa

const std::map<std::string, Claim>& ifa_claims() { return ifa::table(); }

}  // namespace opgate::regression_claims
