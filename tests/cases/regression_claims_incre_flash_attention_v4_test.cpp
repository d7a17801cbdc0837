// Regression claims of aclnnIncreFlashAttentionV4 (cases/incre_flash_attention_v4/regression.json):
// each predicate states, over the params and filled inputs, the condition the case's issue names,
// with the window written out from the docs' formula (README "The window"), not taken from the code.
#include <algorithm>
#include <string>
#include <vector>

#include "tests/cases/regression_claims.h"

namespace opgate::regression_claims {
namespace {

int64_t pad_of(const Filled& f) { return f.params.at("kvPaddingSize").get<int64_t>(); }
bool padded(const Filled& f) { return f.params.contains("kvPaddingSize") && !f.params.at("kvPaddingSize").is_null(); }
bool has_lengths(const Filled& f) {
  return f.params.at("actualSeqLengths").is_array() && !f.params.at("actualSeqLengths").empty();
}
// L_b per batch from actualSeqLengths (one value broadcast).
std::vector<int64_t> lengths_of(const Filled& f) {
  const auto& a = f.params.at("actualSeqLengths");
  std::vector<int64_t> l;
  for (int64_t b = 0; b < f.integer("B"); ++b) l.push_back(a.at(a.size() == 1 ? 0 : static_cast<size_t>(b)).get<int64_t>());
  return l;
}

const std::map<std::string, Claim>& table() {
  static const std::map<std::string, Claim> t = {
      {"ifa4.pad_without_lengths_ignored.f16.001",
       {[](const Filled& f) {
          // A positive kvPaddingSize on a contiguous KV tensor and no actualSeqLengths.
          return padded(f) && pad_of(f) > 0 && f.params.at("kvCache") == "tensor" && !has_lengths(f);
        }, ""}},
      {"ifa4.pad_list_ignored.bf16.001",
       {[](const Filled& f) {
          // A positive kvPaddingSize, actualSeqLengths given, KV a tensor list with some S_b > L_b + p
          // (left padding would move that batch's window).
          if (!padded(f) || pad_of(f) <= 0 || f.params.at("kvCache") != "list" || !has_lengths(f)) return false;
          const std::vector<int64_t> l = lengths_of(f);
          const auto& s = f.params.at("kvSeqLens");
          for (size_t b = 0; b < l.size(); ++b) {
            if (s.at(b).get<int64_t>() > l[b]) return true;
          }
          return false;
        }, ""}},
      {"ifa4.negative_pad_is_zero.f16.001",
       {[](const Filled& f) {
          // kvPaddingSize < 0 with lengths, and some L_b < S (so a window at S - L_b differs from V3's).
          if (!padded(f) || pad_of(f) >= 0 || !has_lengths(f)) return false;
          const std::vector<int64_t> l = lengths_of(f);
          return std::any_of(l.begin(), l.end(), [&](int64_t x) { return x < f.integer("S"); });
        }, ""}},
      {"ifa4.window_before_zero_int8_out.f16.001",
       {[](const Filled& f) {
          // int8 output with a quantOffset2, one batch whose window starts before 0 (S - p - L_b < 0)
          // and one whose window fits.
          if (!padded(f) || !has_lengths(f) || f.params.at("outDtype") != "int8" || !f.has("quantOffset2")) return false;
          bool before = false, fits = false;
          for (int64_t l : lengths_of(f)) {
            const int64_t start = f.integer("S") - std::max<int64_t>(pad_of(f), 0) - l;
            before = before || start < 0;
            fits = fits || (start >= 0 && l > 0);
          }
          return before && fits;
        }, ""}},
      {"ifa4.mask_at_key_positions.bf16.001",
       {[](const Filled& f) {
          // Padding that moves the windows (p > 0, lengths, contiguous KV), a mask with a masked and an
          // unmasked position inside some window, and a per-batch pse.
          if (!padded(f) || pad_of(f) <= 0 || !has_lengths(f) || !f.has("attenMask") || !f.has("pseShift")) return false;
          if (f.at("pseShift").dim(0) != f.integer("B")) return false;
          const Tensor& m = f.at("attenMask");
          const int64_t ms = m.shape().back();
          const std::vector<int64_t> l = lengths_of(f);
          for (int64_t b = 0; b < f.integer("B"); ++b) {
            const int64_t end = f.integer("S") - pad_of(f), start = end - l[static_cast<size_t>(b)];
            if (start < 0) continue;
            bool on = false, off = false;
            for (int64_t t = start; t < end; ++t) (m.get(b * ms + t) != 0 ? on : off) = true;
            if (on && off) return true;
          }
          return false;
        }, ""}},
  };
  return t;
}

}  // namespace

const std::map<std::string, Claim>& ifa4_claims() { return table(); }

}  // namespace opgate::regression_claims
