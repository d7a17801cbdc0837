// Properties of aclnnIncreFlashAttentionV4 (suite IncreFlashAttentionV4Props, RapidCheck) over the
// operator's generator through the RapidCheck Chooser (tests/cases/rc_chooser.h), so failures
// shrink. They tie V4 to V3: zero padding is V3 bit for bit, and padding p is V3 on the KV with the
// first S - p - L_b and the last p positions of each batch removed (reference and emulated device).
#include <algorithm>
#include <cstring>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "device/emu/incre_flash_attention_v3.h"
#include "device/layout/incre_flash_attention_v3.h"
#include "tests/cases/rc_chooser.h"
#include "tests/device/incre_flash_attention_v4_testing.h"

namespace opgate {
namespace {

namespace ifa4_cases = incre_flash_attention_v4_testing::ifa4_cases;
namespace ifa4_ref = incre_flash_attention_v4_testing::ifa4_ref;
namespace v3_ref = ref::incre_flash_attention_v3;
using incre_flash_attention_v4_testing::Params;
using incre_flash_attention_v4_testing::run_device;
using testing::RcChooser;

struct Drawn {
  Params p;
  ifa4_cases::Knobs k;
  TensorMap in;
  FillMode mode;
  uint64_t seed;
};

Drawn draw(const nlohmann::json& overrides = nlohmann::json::object()) {
  RcChooser chooser;
  nlohmann::json j = ifa4_cases::generate(chooser);
  for (auto it = overrides.begin(); it != overrides.end(); ++it) j[it.key()] = it.value();
  auto pk = ifa4_cases::from_json(j).value();
  const FillMode mode = *rc::gen::element(FillMode::kExact, FillMode::kRealistic, FillMode::kAdversarial);
  const auto seed = *rc::gen::inRange<uint64_t>(0, 1000);
  auto in = ifa4_cases::fill(pk.first, pk.second, ifa4_ref::specs(pk.first), mode, seed).value();
  RC_CLASSIFY(ifa4_ref::padding_applies(pk.first), "padding applies");
  return {pk.first, pk.second, std::move(in), mode, seed};
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// V3's device pipeline on V3 inputs.
Tensor run_v3(const v3_ref::Params& p, const TensorMap& canonical) {
  const TensorMap packed = layout::incre_flash_attention_v3::pack(p, canonical);
  Tensor out = Tensor::zeros(p.out_dtype, v3_ref::specs(p).at("attentionOut").shape);
  TensorMap o{{"attentionOut", out}};
  const Status s = emu::incre_flash_attention_v3::run(p, packed, o, "");
  OPGATE_CHECK(s.is_ok(), s.to_string());
  return out;
}

// V4 with kvPaddingSize = 0 on its fill (V3's data moved into the windows [S - L_b, S)) against V3 on
// V3's fill of the same seed: expected values, budgets and the emulated device agree bit for bit.
RC_GTEST_PROP(IncreFlashAttentionV4Props, zero_padding_is_v3_bit_for_bit, ()) {
  const Drawn d = draw({{"kvPaddingSize", 0}});
  // A pseShift of batch 1 is shared by windows at different starts, so the fill cannot move it.
  RC_PRE(!d.p.base.has_pse || d.p.base.pse_batch == d.p.base.batch);
  const TensorMap v3_in =
      cases::incre_flash_attention_v3::fill(d.p.base, d.k, v3_ref::specs(d.p.base), d.mode, d.seed).value();
  const RefOutputs mine = ifa4_ref::reference(d.p, d.in);
  const RefOutputs theirs = v3_ref::reference(d.p.base, v3_in);
  RC_ASSERT(same_bits(mine.expected.at("attentionOut"), theirs.expected.at("attentionOut")));
  RC_ASSERT(same_bits(mine.magnitude.at("attentionOut"), theirs.magnitude.at("attentionOut")));
  RC_ASSERT(same_bits(run_device(d.p, d.in), run_v3(d.p.base, v3_in)));
}

// V3 on a one-batch problem holding batch b's window only: S = L_b, the KV rows (and mask, pse) of
// positions start_b .. start_b + L_b - 1. Padding, lengths and the other batches are gone.
RC_GTEST_PROP(IncreFlashAttentionV4Props, padding_is_v3_on_the_trimmed_kv, ()) {
  const Drawn d = draw();
  const v3_ref::Params& b = d.p.base;
  RC_PRE(b.kv_cache == v3_ref::KvCache::kTensor);
  const std::vector<ifa4_ref::KvWindow> w = ifa4_ref::windows(d.p);
  const Tensor mine_ref = ifa4_ref::reference(d.p, d.in).expected.at("attentionOut");
  const Tensor mine_dev = run_device(d.p, d.in);
  const int64_t n2 = v3_ref::kv_heads(b);
  const int64_t row = b.num_heads * b.head_dim;
  for (int64_t bi = 0; bi < b.batch; ++bi) {
    const ifa4_ref::KvWindow& wb = w[static_cast<size_t>(bi)];
    if (wb.length == 0) {
      for (int64_t i = 0; i < row && b.out_dtype != DType::kI8; ++i) RC_ASSERT(mine_ref.get(bi * row + i) == 0.0);
      continue;
    }
    v3_ref::Params one = b;
    one.batch = 1;
    one.seq = wb.length;
    one.has_actual_seq_lengths = false;
    one.actual_seq_lengths.clear();
    one.pse_batch = 1;
    one.pse_seq = b.has_pse ? wb.length : 0;
    one.mask_seq = b.has_mask ? wb.length : 0;
    TensorMap in;
    for (const auto& [name, spec] : v3_ref::canonical_specs(one)) in[name] = Tensor::zeros(spec.dtype, spec.shape);
    const int64_t cap = v3_ref::kv_capacity(b);
    for (const char* name : {"key", "value"}) {
      for (int64_t h = 0; h < n2; ++h) {
        for (int64_t t = 0; t < wb.length; ++t) {
          for (int64_t e = 0; e < b.head_dim; ++e) {
            in.at(name).set((h * wb.length + t) * b.head_dim + e,
                            d.in.at(name).get(((bi * n2 + h) * cap + wb.start + t) * b.head_dim + e));
          }
        }
      }
    }
    for (int64_t i = 0; i < row; ++i) in.at("query").set(i, d.in.at("query").get(bi * row + i));
    if (b.has_mask) {
      for (int64_t t = 0; t < wb.length; ++t) in.at("attenMask").set(t, d.in.at("attenMask").get(bi * b.mask_seq + wb.start + t));
    }
    if (b.has_pse) {
      const int64_t pb = b.pse_batch == b.batch ? bi : 0;
      for (int64_t n = 0; n < b.num_heads; ++n) {
        for (int64_t t = 0; t < wb.length; ++t) {
          in.at("pseShift").set(n * wb.length + t, d.in.at("pseShift").get((pb * b.num_heads + n) * b.pse_seq + wb.start + t));
        }
      }
    }
    for (const char* name : {"antiquantScale", "antiquantOffset", "quantScale2", "quantOffset2"}) {
      if (in.count(name) != 0) in[name] = d.in.at(name).clone();
    }
    const Tensor theirs = v3_ref::reference(one, in).expected.at("attentionOut");
    for (int64_t i = 0; i < row; ++i) RC_ASSERT(mine_ref.get(bi * row + i) == theirs.get(i));
    // The device: same values unless the schedule differs (it depends on B and max L, §1.4.7).
    const auto s4 = emu::incre_flash_attention_v3::schedule(b);
    const auto s3 = emu::incre_flash_attention_v3::schedule(one);
    if (s4.tile == s3.tile && s4.split_len == 0 && s3.split_len == 0) {
      const Tensor dev = run_v3(one, in);
      for (int64_t i = 0; i < row; ++i) RC_ASSERT(mine_dev.get(bi * row + i) == dev.get(i));
    }
  }
}

RC_GTEST_PROP(IncreFlashAttentionV4Props, negative_padding_is_zero_padding, ()) {
  Drawn d = draw();
  RC_PRE(d.p.has_kv_padding_size);
  Params zero = d.p;
  zero.kv_padding_size = 0;
  Params neg = d.p;
  neg.kv_padding_size = -*rc::gen::inRange<int64_t>(1, 100);
  const auto a = ifa4_ref::windows(zero);
  const auto c = ifa4_ref::windows(neg);
  for (size_t i = 0; i < a.size(); ++i) RC_ASSERT(a[i].start == c[i].start && a[i].length == c[i].length);
}

}  // namespace
}  // namespace opgate
