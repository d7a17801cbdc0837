// Every regression case must contain the condition its `issue` names (issue 12): a case that no
// longer holds its condition pins nothing. Each case id of every operator's regression.json has
// here either a predicate over its params and filled inputs, written from the issue text (not from
// the code under test), or the reason its claim cannot be stated as one. An id with neither fails,
// so a new regression case must state its claim.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/case.h"
#include "core/op_registry.h"

namespace opgate {
namespace {

using Json = nlohmann::json;

// What a claim sees: the case's params with every default made explicit, and the filled inputs.
struct Filled {
  Json params;
  TensorMap in;
  const Tensor& at(const std::string& name) const { return in.at(name); }
  bool has(const std::string& name) const { return in.count(name) != 0 && in.at(name).defined(); }
  int64_t integer(const std::string& key) const { return params.at(key).get<int64_t>(); }
  bool flag(const std::string& key) const { return params.contains(key) && params.at(key).is_boolean() && params.at(key).get<bool>(); }
};

using Predicate = std::function<bool(const Filled&)>;

struct Claim {
  Predicate holds;     // the condition the issue names
  std::string reason;  // or why it cannot be stated over params and inputs
};

// ---------------------------------------------------------------------------------------------
// MoeFinalizeRoutingV2Grad: slot i = r*K + k reads gradY row r and expandedRowIdx[i]; it is
// dropped when the index is -1 or >= D0 (routing-ops.md §3.2).
namespace mfrg {

int64_t top_k(const Filled& f) { return f.flag("scales") ? f.integer("K") : 1; }

int64_t d0(const Filled& f) {
  const int64_t slots = f.integer("R") * top_k(f);
  if (f.integer("dropPadMode") == 1) return f.integer("expertNum") * f.integer("expertCapacity");
  const int64_t a = f.integer("activeNum");
  return a > 0 && a < slots ? a : slots;
}

bool dropped(const Filled& f, int64_t i) {
  const double row = f.at("expandedRowIdx").get(i);
  return row < 0 || row >= static_cast<double>(d0(f));
}

bool row_holds(const Filled& f, int64_t r, const std::function<bool(double)>& pred) {
  const int64_t h = f.integer("H");
  for (int64_t j = 0; j < h; ++j) {
    if (pred(f.at("gradY").get(r * h + j))) return true;
  }
  return false;
}

const std::map<std::string, Claim>& claims() {
  static const std::map<std::string, Claim> c = {
      {"mfrg.dropped_no_bias_inf_grad.f32.001",
       {[](const Filled& f) {
          // Some dropped slot, without bias, whose gradY row holds an Inf.
          if (!f.flag("scales") || f.flag("bias")) return false;
          for (int64_t i = 0; i < f.at("expandedRowIdx").numel(); ++i) {
            if (dropped(f, i) && row_holds(f, i / top_k(f), [](double v) { return std::isinf(v); })) return true;
          }
          return false;
        }, ""}},
      {"mfrg.dropped_with_bias_sum.bf16.001",
       {[](const Filled& f) {
          // Some dropped slot with bias whose sum bias[e]*gradY[r] is not 0.
          if (!f.flag("scales") || !f.flag("bias")) return false;
          const int64_t h = f.integer("H");
          for (int64_t i = 0; i < f.at("expandedRowIdx").numel(); ++i) {
            if (!dropped(f, i)) continue;
            const auto e = static_cast<int64_t>(f.at("expertIdxOptional").get(i));
            double sum = 0;
            for (int64_t j = 0; j < h; ++j) {
              sum += f.at("biasOptional").get(e * h + j) * f.at("gradY").get(i / top_k(f) * h + j);
            }
            if (sum != 0) return true;
          }
          return false;
        }, ""}},
      {"mfrg.dropless_minus_one_rows_undefined.f16.001",
       {[](const Filled& f) {
          // Mode 0 with some -1 index, so some row below D0 is addressed by no slot.
          if (f.integer("dropPadMode") != 0) return false;
          std::set<int64_t> addressed;
          for (int64_t i = 0; i < f.at("expandedRowIdx").numel(); ++i) {
            addressed.insert(static_cast<int64_t>(f.at("expandedRowIdx").get(i)));
          }
          for (int64_t row = 0; row < d0(f); ++row) {
            if (!addressed.count(row)) return addressed.count(-1) != 0;
          }
          return false;
        }, ""}},
      {"mfrg.active_num_negative_ignored.f32.001",
       {[](const Filled& f) { return f.integer("dropPadMode") == 0 && f.integer("activeNum") < 0; }, ""}},
      {"mfrg.droppad_zero_fill.f16.001",
       {[](const Filled& f) {
          // Mode 1 with some of the E*C rows addressed by no slot.
          if (f.integer("dropPadMode") != 1) return false;
          std::set<int64_t> addressed;
          for (int64_t i = 0; i < f.at("expandedRowIdx").numel(); ++i) {
            addressed.insert(static_cast<int64_t>(f.at("expandedRowIdx").get(i)));
          }
          for (int64_t row = 0; row < d0(f); ++row) {
            if (!addressed.count(row)) return true;
          }
          return false;
        }, ""}},
      {"mfrg.bias_without_scales_ignored.f16.001",
       {[](const Filled& f) {
          // bias and expertIdx passed, scales not, and the bias is not all zeros (ignoring it shows).
          if (f.flag("scales") || !f.flag("bias") || !f.has("biasOptional") || !f.has("expertIdxOptional")) return false;
          for (int64_t j = 0; j < f.at("biasOptional").numel(); ++j) {
            if (f.at("biasOptional").get(j) != 0) return true;
          }
          return false;
        }, ""}},
  };
  return c;
}

}  // namespace mfrg

// ---------------------------------------------------------------------------------------------
// FfnWorkerBatching: the entries the kernel sorts (routing-ops.md §1.5): NORM expert_ids_buf
// [0, outNum*BS*K); RECV the ids of descriptor (s, pollingIndex) of every session s. An entry is
// valid iff its id < 1e6.
namespace fwb {

constexpr double kMask = 1e6;

struct Entry {
  int64_t slot, bs, k;  // slot: a (NORM) or session s (RECV)
  double id;
};

std::vector<int64_t> shape(const Filled& f) { return f.params.at("maxOutShape").get<std::vector<int64_t>>(); }
bool recv(const Filled& f) { return f.integer("needSchedule") == 1; }

std::vector<Entry> entries(const Filled& f) {
  const std::vector<int64_t> s = shape(f);
  const int64_t a_n = s[0], bs_n = s[1], k_n = s[2];
  const int64_t bsk = bs_n * k_n;
  std::vector<Entry> out;
  if (recv(f)) {
    const int64_t m = f.integer("microBatchNum");
    const int64_t p = f.integer("pollingIndex");
    for (int64_t a = 0; a < a_n; ++a) {
      const int64_t base = (a * m + p) * (2 + bsk) + 2;
      for (int64_t j = 0; j < bsk; ++j) out.push_back({a, j / k_n, j % k_n, f.at("tokenInfoBuf").get(base + j)});
    }
  } else {
    for (int64_t x = 0; x < f.integer("outNum") * bsk; ++x) {
      out.push_back({x / bsk, x % bsk / k_n, x % k_n, f.at("expertIdsBuf").get(x)});
    }
  }
  return out;
}

std::vector<Entry> valid(const Filled& f) {
  std::vector<Entry> v;
  for (const Entry& e : entries(f)) {
    if (e.id < kMask) v.push_back(e);
  }
  return v;
}

int64_t distinct_valid(const Filled& f) {
  std::set<double> ids;
  for (const Entry& e : valid(f)) ids.insert(e.id);
  return static_cast<int64_t>(ids.size());
}

const std::map<std::string, Claim>& claims() {
  static const std::map<std::string, Claim> c = {
      {"fwb.group_list_tail_multi_core.f16.001",
       {[](const Filled& f) {
          // NORM over 512 valid tokens (multi-core lister) with groupList rows after the terminator.
          return !recv(f) && valid(f).size() > 512 && distinct_valid(f) + 1 < f.integer("expertNum");
        }, ""}},
      {"fwb.group_list_tail_recv.bf16.001",
       {[](const Filled& f) { return recv(f) && !valid(f).empty() && distinct_valid(f) + 1 < f.integer("expertNum"); }, ""}},
      {"fwb.norm_all_masked_group_row.f16.001",
       {[](const Filled& f) { return !recv(f) && !entries(f).empty() && valid(f).empty(); }, ""}},
      {"fwb.recv_all_masked_group_row.f16.001",
       {[](const Filled& f) { return recv(f) && !entries(f).empty() && valid(f).empty(); }, ""}},
      {"fwb.expert_offsets_k_slot.bf16.001",
       {[](const Filled& f) {
          // Some valid entry whose bs index and k slot differ, so swapping them shows.
          for (const Entry& e : valid(f)) {
            if (e.bs != e.k) return true;
          }
          return false;
        }, ""}},
      {"fwb.int8_scale_at_h.i8.001",
       {[](const Filled& f) {
          // int8 tokens, H not a multiple of 32, and a slot long enough to hold a scale at
          // Align32(H) too, so the two readings differ and neither faults.
          const int64_t h = shape(f)[3];
          const int64_t align = (h + 31) / 32 * 32;
          return f.integer("tokenDtype") == 2 && h % 32 != 0 && f.integer("attnToFfnTokenSize") >= align + 4 &&
                 !valid(f).empty();
        }, ""}},
      {"fwb.layer_packed_ids.f16.001",
       {[](const Filled& f) {
          // layerNum > 1 and some valid id packed into a layer above 0.
          const int64_t layers = f.integer("layerNum");
          if (layers < 2) return false;
          const int64_t per_layer = f.integer("expertNum") / layers;
          for (const Entry& e : valid(f)) {
            if (e.id >= static_cast<double>(per_layer)) return true;
          }
          return false;
        }, ""}},
      {"fwb.mask_threshold_exact.i8.001",
       {[](const Filled& f) {
          for (const Entry& e : entries(f)) {
            if (e.id == kMask) return true;
          }
          return false;
        }, ""}},
      {"fwb.norm_session_values.f16.001",
       {[](const Filled& f) {
          // NORM with a valid entry in a slot a whose session or micro batch id is not a.
          if (recv(f)) return false;
          for (const Entry& e : valid(f)) {
            const auto a = static_cast<double>(e.slot);
            if (f.at("sessionIdsBuf").get(e.slot) != a || f.at("microBatchIdsBuf").get(e.slot) != a) return true;
          }
          return false;
        }, ""}},
      {"fwb.recv_micro_batch_before_increment.bf16.001",
       {[](const Filled& f) {
          // RECV polling the last micro batch (the increment wraps) with something valid to report.
          return recv(f) && f.integer("microBatchNum") > 1 &&
                 f.integer("pollingIndex") == f.integer("microBatchNum") - 1 && !valid(f).empty();
        }, ""}},
  };
  return c;
}

}  // namespace fwb

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

const std::map<std::string, Claim>& claims() {
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

const std::map<std::string, Claim>& claims() {
  static const std::map<std::string, Claim> c = {
      {"ifa.fully_masked_mean_of_v.bf16.001",
       {[](const Filled& f) {
          // Some batch whose mask masks every position below L_b (and L_b > 0).
          if (!f.has("attenMask")) return false;
          const std::vector<int64_t> l = lengths(f);
          for (int64_t b = 0; b < batch(f); ++b) {
            bool all = l[static_cast<size_t>(b)] > 0;
            for (int64_t t = 0; t < l[static_cast<size_t>(b)]; ++t) all = all && f.at("attenMask").get(b * mask_seq(f) + t) != 0;
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
          for (int64_t i = 0; i < f.at("quantOffset2").numel(); ++i) offset = offset || std::nearbyint(f.at("quantOffset2").get(i)) != 0;
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

const Claim* claim_of(const std::string& id) {
  for (const auto* table : {&mfrg::claims(), &fwb::claims(), &mffn::claims(), &ifa::claims()}) {
    const auto it = table->find(id);
    if (it != table->end()) return &it->second;
  }
  return nullptr;
}

class RegressionClaims : public ::testing::TestWithParam<std::string> {};

TEST_P(RegressionClaims, every_case_holds_the_condition_its_issue_names) {
  const std::string path = std::string(OPGATE_SOURCE_DIR) + "/cases/" + GetParam() + "/regression.json";
  auto cases = load_case_file(path);
  ASSERT_TRUE(cases.has_value()) << cases.status().message();
  ASSERT_FALSE(cases->empty()) << path;
  for (const Case& c : *cases) {
    SCOPED_TRACE(c.id);
    const Claim* claim = claim_of(c.id);
    ASSERT_NE(claim, nullptr) << c.id << " (" << c.issue
                              << ") states no claim: add a predicate or a reason to " << __FILE__;
    if (!claim->holds) {
      EXPECT_FALSE(claim->reason.empty()) << c.id << ": neither a predicate nor a reason";
      continue;
    }
    auto problem = make_problem(c);
    ASSERT_TRUE(problem.has_value()) << problem.status().message();
    auto in = (*problem)->fill(c.fill, c.seed);
    ASSERT_TRUE(in.has_value()) << in.status().message();
    const Filled f{(*problem)->params_json(), std::move(*in)};
    EXPECT_TRUE(claim->holds(f)) << c.id << " does not contain the condition of its issue: " << c.issue;
  }
}

// The claim of case `id` in cases/<stem>/regression.json after `patch` is merged into its params.
bool holds_after(const std::string& stem, const std::string& id, const Json& patch) {
  auto cases = load_case_file(std::string(OPGATE_SOURCE_DIR) + "/cases/" + stem + "/regression.json");
  EXPECT_TRUE(cases.has_value());
  if (!cases.has_value()) return true;
  for (Case c : *cases) {
    if (c.id != id) continue;
    c.params.merge_patch(patch);
    auto problem = make_problem(c);
    EXPECT_TRUE(problem.has_value()) << problem.status().message();
    if (!problem.has_value()) return true;
    auto in = (*problem)->fill(c.fill, c.seed);
    EXPECT_TRUE(in.has_value());
    if (!in.has_value()) return true;
    return claim_of(id)->holds(Filled{(*problem)->params_json(), std::move(*in)});
  }
  ADD_FAILURE() << id << " not found";
  return true;
}

// The predicates can fail: each is false on its case changed so that the condition is gone.
TEST(RegressionClaimsTable, predicates_reject_cases_without_the_condition) {
  // The case as it was before issue 12: its only Inf row had no dropped slot.
  EXPECT_FALSE(holds_after("moe_finalize_routing_v2_grad", "mfrg.dropped_no_bias_inf_grad.f32.001",
                           {{"dropRate", 0.125}}));
  EXPECT_FALSE(holds_after("moe_finalize_routing_v2_grad", "mfrg.bias_without_scales_ignored.f16.001",
                           {{"scales", true}}));
  EXPECT_FALSE(holds_after("ffn_worker_batching", "fwb.mask_threshold_exact.i8.001", {{"maskValue", 2147483647}}));
  EXPECT_FALSE(holds_after("ffn_worker_batching", "fwb.group_list_tail_multi_core.f16.001",
                           {{"maxOutShape", {2, 16, 9, 2}}}));  // 288 tokens: one core
  EXPECT_FALSE(holds_after("moe_ffn", "mffn.regress_leading_empty_experts.f16.001",
                           {{"expertTokens", {1, 0, 5, 0, 3}}}));
  EXPECT_FALSE(holds_after("incre_flash_attention_v3", "ifa.extra_lengths_ignored.bf16.001",
                           {{"actualSeqLengths", {12, 29}}}));
}

// The claims are no larger than the files: a stale entry would hide a renamed case.
TEST(RegressionClaimsTable, every_claim_names_a_current_regression_case) {
  std::set<std::string> ids;
  for (const OpInfo& op : all_ops()) {
    auto cases = load_case_file(std::string(OPGATE_SOURCE_DIR) + "/cases/" + op.stem + "/regression.json");
    ASSERT_TRUE(cases.has_value()) << cases.status().message();
    for (const Case& c : *cases) ids.insert(c.id);
  }
  for (const auto* table : {&mfrg::claims(), &fwb::claims(), &mffn::claims(), &ifa::claims()}) {
    for (const auto& [id, claim] : *table) EXPECT_TRUE(ids.count(id)) << id << " is in no regression.json";
  }
}

std::vector<std::string> stems() {
  std::vector<std::string> s;
  for (const OpInfo& op : all_ops()) s.push_back(op.stem);
  return s;
}

std::string op_test_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(AllOps, RegressionClaims, ::testing::ValuesIn(stems()), op_test_name);

}  // namespace
}  // namespace opgate
