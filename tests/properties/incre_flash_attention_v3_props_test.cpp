// RapidCheck properties of IncreFlashAttentionV3 (style-and-layout.md B16): the operator's
// invariances checked on the reference and on the emulated device pipeline (pack -> emu -> unpack).
// Problems come from the op's own generate(Chooser&) through the RapidCheck Chooser adaptor
// (tests/cases/rc_chooser.h), so failures shrink; variants change one aspect of the call.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "tests/cases/rc_chooser.h"
#include "tests/device/incre_flash_attention_v3_testing.h"

namespace opgate {
namespace {

using incre_flash_attention_v3_testing::ifa_cases::Builder;
using incre_flash_attention_v3_testing::ifa_cases::Knobs;
using incre_flash_attention_v3_testing::Params;
namespace ifa_cases = incre_flash_attention_v3_testing::ifa_cases;
namespace ifa_ref = incre_flash_attention_v3_testing::ifa_ref;

using testing::RcChooser;

// A generated problem (params JSON, parsed) and its inputs.
struct Drawn {
  nlohmann::json json;
  Params p;
  Knobs k;
  TensorMap in;
};

Params parse(const nlohmann::json& j) { return ifa_cases::from_json(j).value().first; }

// The same problem with one padded KV tensor of S = max L_b and explicit per-batch lengths.
nlohmann::json tensor_form(nlohmann::json j) {
  const Params p = parse(j);
  if (p.kv_cache == ifa_ref::KvCache::kTensor) return j;
  for (const char* key : {"kvSeqLens", "maxBlockNumPerSeq", "blockNum", "tablePad", "pseS", "maskS"}) j.erase(key);
  const std::vector<int64_t> lengths = ifa_ref::effective_lengths(p);
  j["kvCache"] = "tensor";
  j["S"] = std::max<int64_t>(1, *std::max_element(lengths.begin(), lengths.end()));
  j["actualSeqLengths"] = lengths;
  return j;
}

// A generated problem, optionally in tensor form, with `overrides` applied to its params and at
// least `min_batch` batches (one actualSeqLengths value then broadcasts).
Drawn draw(bool tensor, const nlohmann::json& overrides = nlohmann::json::object(), int64_t min_batch = 1) {
  RcChooser chooser;
  nlohmann::json j = ifa_cases::generate(chooser);
  if (tensor) j = tensor_form(j);
  for (auto it = overrides.begin(); it != overrides.end(); ++it) j[it.key()] = it.value();
  if (j["B"].get<int64_t>() < min_batch) j["B"] = min_batch;
  auto pk = ifa_cases::from_json(j).value();
  const FillMode mode = *rc::gen::element(FillMode::kExact, FillMode::kRealistic, FillMode::kAdversarial);
  const auto seed = *rc::gen::inRange<uint64_t>(0, 1000);
  auto in = ifa_cases::fill(pk.first, pk.second, ifa_ref::specs(pk.first), mode, seed).value();
  RC_CLASSIFY(pk.first.kv_dtype == DType::kI8, "int8 KV");
  RC_CLASSIFY(pk.first.out_dtype == DType::kI8, "int8 out");
  RC_CLASSIFY(pk.first.has_mask, "mask");
  RC_CLASSIFY(pk.first.has_pse, "pse");
  return {j, pk.first, pk.second, std::move(in)};
}

// Copies rows of `inner_src` elements into rows of `inner_dst` (the shorter prefix), bit-exact:
// KV (B*N2 rows of S*D), attenMask (B rows of maskS), pseShift (pseBatch*N rows of pseS).
void copy_prefix(const Tensor& src, Tensor& dst, int64_t inner_src, int64_t inner_dst) {
  const int64_t rows = inner_src > 0 ? src.numel() / inner_src : 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < std::min(inner_src, inner_dst); ++i) dst.set_bits(r * inner_dst + i, src.bits(r * inner_src + i));
  }
}

// Inputs of `q` carrying the data of `p`'s inputs: same names, prefixes copied where the KV
// capacity or the mask/pse length differ; q's block table comes from filling q.
TensorMap transplant(const Params& p, const TensorMap& in, const Params& q, uint64_t seed) {
  TensorMap out = ifa_cases::fill(q, Knobs(), ifa_ref::specs(q), FillMode::kRealistic, seed).value();
  for (auto& [name, t] : out) {
    if (name == "blocktable") continue;
    const Tensor& src = in.at(name);
    if (name == "key" || name == "value") {
      copy_prefix(src, t, ifa_ref::kv_capacity(p) * p.head_dim, ifa_ref::kv_capacity(q) * q.head_dim);
    } else if (name == "attenMask" || name == "pseShift") {
      copy_prefix(src, t, src.shape().back(), t.shape().back());
    } else {
      t = src.clone();
    }
  }
  return out;
}

// Bit-identical elements (the layouts give the output different shapes over one memory order).
bool same_bits(const Tensor& a, const Tensor& b) { return a.numel() == b.numel() && a.reshaped(b.shape()).bytes_equal(b); }

RC_GTEST_PROP(IncreFlashAttentionV3Props, generated_problems_are_valid_and_round_trip, ()) {
  RcChooser chooser;
  const nlohmann::json j = ifa_cases::generate(chooser);
  const auto pk = ifa_cases::from_json(j);
  RC_ASSERT(pk.has_value());
  RC_ASSERT(ifa_ref::validate(pk->first, ifa_ref::specs(pk->first)).is_ok());
  const auto again = ifa_cases::from_json(ifa_cases::to_json(pk->first, pk->second));
  RC_ASSERT(again.has_value());
  RC_ASSERT(again->first == pk->first);
  RC_ASSERT(again->second == pk->second);
}

RC_GTEST_PROP(IncreFlashAttentionV3Props, paged_equals_contiguous, ()) {
  // G >= 2 and L <= 1024 give both forms one tile and no flash-decode split (spec §1.4.7), so the
  // kernel does the same arithmetic on the same data: outputs must be bit-identical.
  Drawn d = draw(true, {{"inputLayout", "BNSD"}, {"numHeads", 4}, {"numKeyValueHeads", 2}});
  nlohmann::json pj = d.json;
  pj.erase("S");
  pj["kvCache"] = *rc::gen::element<std::string>("paged3d", "paged4d");
  pj["blockSize"] = *rc::gen::element<int64_t>(32, 64, 128);
  pj["actualSeqLengths"] = ifa_ref::effective_lengths(d.p);
  if (d.p.has_pse) pj.erase("pseS");
  if (d.p.has_mask) pj.erase("maskS");
  const Params q = parse(pj);
  const TensorMap qin = transplant(d.p, d.in, q, 7);
  RC_ASSERT(ifa_ref::reference(d.p, d.in).expected.at("attentionOut").bytes_equal(
      ifa_ref::reference(q, qin).expected.at("attentionOut")));
  RC_ASSERT(same_bits(incre_flash_attention_v3_testing::run_device(d.p, d.in), incre_flash_attention_v3_testing::run_device(q, qin)));
}

RC_GTEST_PROP(IncreFlashAttentionV3Props, gqa_equals_mha_with_repeated_kv_heads, ()) {
  // The group is drawn directly: a precondition g > 1 on generated problems ran into RapidCheck's
  // discard limit at small sizes, where the generator keeps its first choice (G = 1).
  const int64_t kv_heads = *rc::gen::inRange<int64_t>(1, 4);
  const int64_t group = *rc::gen::element<int64_t>(2, 3, 4, 8);
  Drawn d = draw(true, {{"numKeyValueHeads", kv_heads}, {"numHeads", kv_heads * group}});
  const int64_t n2 = ifa_ref::kv_heads(d.p);
  const int64_t g = ifa_ref::group_size(d.p);
  RC_ASSERT(g == group);
  nlohmann::json mj = d.json;
  mj["numKeyValueHeads"] = d.p.num_heads;
  const Params m = parse(mj);
  TensorMap min = ifa_cases::fill(m, d.k, ifa_ref::specs(m), FillMode::kExact, 1).value();
  const int64_t row = d.p.seq * d.p.head_dim;  // one (b, kv head) block of the canonical KV
  for (const char* name : {"key", "value"}) {
    for (int64_t b = 0; b < d.p.batch; ++b) {
      for (int64_t n = 0; n < d.p.num_heads; ++n) {
        for (int64_t i = 0; i < row; ++i) {
          min.at(name).set_bits((b * d.p.num_heads + n) * row + i, d.in.at(name).bits((b * n2 + n / g) * row + i));
        }
      }
    }
  }
  for (auto& [name, t] : min) {
    if (name == "key" || name == "value") continue;
    if (name != "antiquantScale" && name != "antiquantOffset") {
      t = d.in.at(name).clone();
      continue;
    }
    // Per-channel antiquant (2, N2*D) -> (2, N*D): head n takes KV head n / G's channels.
    const Tensor& src = d.in.at(name);
    const int64_t dd = d.p.head_dim;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const int64_t half = t.numel() / 2;
      const int64_t c = i % half;
      t.set_bits(i, src.numel() == 2 ? src.bits(i / half) : src.bits(i / half * n2 * dd + c / dd / g * dd + c % dd));
    }
  }
  RC_ASSERT(ifa_ref::reference(d.p, d.in).expected.at("attentionOut").bytes_equal(
      ifa_ref::reference(m, min).expected.at("attentionOut")));
  const RefOutputs r = ifa_ref::reference(d.p, d.in);
  RC_ASSERT(incre_flash_attention_v3_testing::compare(d.p, r, incre_flash_attention_v3_testing::run_device(m, min), FillMode::kRealistic).passed);
}

RC_GTEST_PROP(IncreFlashAttentionV3Props, layouts_agree, ()) {
  Drawn d = draw(false);
  RC_PRE(d.p.kv_cache != ifa_ref::KvCache::kPaged4d);
  const Tensor base = incre_flash_attention_v3_testing::run_device(d.p, d.in);
  for (const char* lay : {"BSH", "BNSD", "BSND"}) {
    nlohmann::json j = d.json;
    j["inputLayout"] = lay;
    j.erase("antiquantShape");
    j.erase("quantShape");
    const Params q = parse(j);
    // Same canonical data and schedule; only addresses differ.
    RC_ASSERT(same_bits(incre_flash_attention_v3_testing::run_device(q, d.in), base));
  }
}

RC_GTEST_PROP(IncreFlashAttentionV3Props, permuting_kv_positions_changes_nothing, ()) {
  // One permutation of [0, L) applied to K, V, mask and pse of every batch (all L_b equal): the
  // softmax is a sum over positions, so only the summation order changes.
  Drawn d = draw(true, {{"actualSeqLengths", nullptr}});
  const int64_t len = d.p.seq;
  std::vector<int64_t> perm(static_cast<size_t>(len));
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t i = len - 1; i > 0; --i) std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(*rc::gen::inRange<int64_t>(0, i + 1))]);
  TensorMap pin;
  for (const auto& [name, t] : d.in) pin[name] = t.clone();
  auto permute = [&](const char* name, int64_t inner, int64_t width) {
    const Tensor& src = d.in.at(name);
    Tensor& dst = pin.at(name);
    for (int64_t r = 0; r < src.numel() / (inner * width); ++r) {
      for (int64_t t = 0; t < len; ++t) {
        for (int64_t i = 0; i < width; ++i) {
          dst.set_bits((r * inner + perm[static_cast<size_t>(t)]) * width + i, src.bits((r * inner + t) * width + i));
        }
      }
    }
  };
  permute("key", len, d.p.head_dim);
  permute("value", len, d.p.head_dim);
  if (d.p.has_mask) permute("attenMask", d.p.mask_seq, 1);
  if (d.p.has_pse) permute("pseShift", d.p.pse_seq, 1);
  const RefOutputs a = ifa_ref::reference(d.p, d.in);
  const RefOutputs b = ifa_ref::reference(d.p, pin);
  const Tensor& ea = a.expected.at("attentionOut");
  const Tensor& eb = b.expected.at("attentionOut");
  for (int64_t i = 0; i < ea.numel(); ++i) {
    // Double sums in another order: far below a millionth of the device budget.
    RC_ASSERT(std::fabs(ea.get(i) - eb.get(i)) <= 1e-6 * 0x1p-24 * a.magnitude.at("attentionOut").get(i) + 1e-300);
  }
  RC_ASSERT(incre_flash_attention_v3_testing::compare(d.p, a, incre_flash_attention_v3_testing::run_device(d.p, pin), FillMode::kRealistic).passed);
}

RC_GTEST_PROP(IncreFlashAttentionV3Props, truncating_to_actual_lengths_equals_shorter_s, ()) {
  // A padded tensor with actualSeqLengths L_b computes what a list of tensors of length L_b does.
  Drawn d = draw(true);
  nlohmann::json j = d.json;
  j.erase("S");
  j["kvCache"] = "list";
  j["kvSeqLens"] = ifa_ref::effective_lengths(d.p);
  j["actualSeqLengths"] = nullptr;
  if (d.p.has_pse) j.erase("pseS");
  if (d.p.has_mask) j.erase("maskS");
  const Params q = parse(j);
  const TensorMap qin = transplant(d.p, d.in, q, 3);
  RC_ASSERT(ifa_ref::reference(d.p, d.in).expected.at("attentionOut").bytes_equal(
      ifa_ref::reference(q, qin).expected.at("attentionOut")));
  RC_ASSERT(same_bits(incre_flash_attention_v3_testing::run_device(d.p, d.in), incre_flash_attention_v3_testing::run_device(q, qin)));
}

RC_GTEST_PROP(IncreFlashAttentionV3Props, batch_independence, ()) {
  // Batch b0's output depends only on batch b0's query, KV, mask and pse rows.
  Drawn d = draw(true, nlohmann::json::object(), 2);
  const int64_t b0 = *rc::gen::inRange<int64_t>(0, d.p.batch);
  TensorMap other = ifa_cases::fill(d.p, d.k, ifa_ref::specs(d.p), FillMode::kRealistic, 4242).value();
  const std::map<std::string, int64_t> per_batch = {{"query", 1}, {"key", 1}, {"value", 1}, {"attenMask", 1},
                                                    {"pseShift", d.p.pse_batch == d.p.batch ? 1 : 0}};
  for (auto& [name, t] : other) {
    const auto it = per_batch.find(name);
    if (it == per_batch.end() || it->second == 0) {
      t = d.in.at(name).clone();
      continue;
    }
    const int64_t inner = t.numel() / d.p.batch;
    for (int64_t i = 0; i < inner; ++i) t.set_bits(b0 * inner + i, d.in.at(name).bits(b0 * inner + i));
  }
  const int64_t row = d.p.num_heads * d.p.head_dim;
  const Tensor ra = ifa_ref::reference(d.p, d.in).expected.at("attentionOut");
  const Tensor rb = ifa_ref::reference(d.p, other).expected.at("attentionOut");
  const Tensor ea = incre_flash_attention_v3_testing::run_device(d.p, d.in);
  const Tensor eb = incre_flash_attention_v3_testing::run_device(d.p, other);
  for (int64_t i = b0 * row; i < (b0 + 1) * row; ++i) {
    RC_ASSERT(ra.bits(i) == rb.bits(i));
    RC_ASSERT(ea.bits(i) == eb.bits(i));
  }
}

}  // namespace
}  // namespace opgate
