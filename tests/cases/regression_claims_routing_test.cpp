// Claims of the regression cases of MoeFinalizeRoutingV2Grad and FfnWorkerBatching (issue 12): one
// predicate per case id over params and filled inputs, written from the case's `issue` text, or
// the reason it cannot be one.
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

const std::map<std::string, Claim>& table() {
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
          if (f.flag("scales") || !f.flag("bias")) return false;
          if (!f.has("biasOptional") || !f.has("expertIdxOptional")) return false;
          for (int64_t j = 0; j < f.at("biasOptional").numel(); ++j) {
            if (f.at("biasOptional").get(j) != 0) return true;
          }
          return false;
        }, ""}},
  };
  return c;
}

}  // namespace mfrg

const std::map<std::string, Claim>& mfrg_claims() { return mfrg::table(); }

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

const std::map<std::string, Claim>& table() {
  static const std::map<std::string, Claim> c = {
      {"fwb.group_list_tail_multi_core.f16.001",
       {[](const Filled& f) {
          // NORM over 512 valid tokens (multi-core lister) with groupList rows after the terminator.
          return !recv(f) && valid(f).size() > 512 && distinct_valid(f) + 1 < f.integer("expertNum");
        }, ""}},
      {"fwb.group_list_tail_recv.bf16.001",
       {[](const Filled& f) {
          return recv(f) && !valid(f).empty() && distinct_valid(f) + 1 < f.integer("expertNum");
        }, ""}},
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

const std::map<std::string, Claim>& fwb_claims() { return fwb::table(); }

}  // namespace opgate::regression_claims
