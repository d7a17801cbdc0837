// Tests of the IncreFlashAttentionV3 reference (attention-and-ffn.md §1.4.1, §1.4.2, §1.4.5, §1.5):
// hand-computed rows (each with its arithmetic), the effective lengths of §1.3, the error budget
// of a trivial row, validation rules whose boundaries are easy to get wrong, and the JSON binding.
#include "reference/incre_flash_attention_v3.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/device/incre_flash_attention_v3_testing.h"

namespace opgate::ref::incre_flash_attention_v3 {
namespace {

using incre_flash_attention_v3_testing::ifa_cases::Builder;
using incre_flash_attention_v3_testing::make_inputs;
using incre_flash_attention_v3_testing::values_of;

// One head, D = 2, S = 2, BNSD, scale 1: q = [1, 0], k0 = [1, 0], k1 = [0, 1], v0 = [2, 0], v1 = [0, 4].
Builder tiny() { return Builder().batch(1).heads(1).head_dim(2).seq(2).layout("BNSD").scale(1.0); }
const std::vector<double> kQ = {1, 0};
const std::vector<double> kK = {1, 0, 0, 1};
const std::vector<double> kV = {2, 0, 0, 4};

std::vector<double> out_of(const Params& p, const TensorMap& in) {
  EXPECT_TRUE(validate(p, specs(p)).is_ok()) << validate(p, specs(p)).message();
  EXPECT_TRUE(check_data(p, in).is_ok()) << check_data(p, in).message();
  return values_of(reference(p, in).expected.at("attentionOut"));
}

TEST(IncreFlashAttentionV3Reference, two_position_softmax) {
  // s = [1, 0], p = [1, e^-1], l = 1 + e^-1: o = [2 / l, 4 e^-1 / l] = [1.46211715726, 1.07576568548].
  const Params p = tiny().build().first;
  const auto o = out_of(p, make_inputs(p, {{"query", kQ}, {"key", kK}, {"value", kV}}));
  const double e = std::exp(-1.0);
  EXPECT_NEAR(o[0], 2 / (1 + e), 1e-15);
  EXPECT_NEAR(o[1], 4 * e / (1 + e), 1e-15);
}

TEST(IncreFlashAttentionV3Reference, scale_is_applied_as_fp32) {
  // scaleValue 0.1 is used as fp32(0.1) = 0.100000001490116119384765625 (spec §1.1). With
  // q = [1, 0], k0 = [1, 0], k1 = [0, 0], v0 = [1, 0], v1 = [0, 1]: o0 = 1 / (1 + e^-f), f = fp32(0.1);
  // with f = 0.1 exactly o0 would be 3.7e-10 smaller.
  const Params p = tiny().scale(0.1).build().first;
  const auto o = out_of(p, make_inputs(p, {{"query", kQ}, {"key", {1, 0, 0, 0}}, {"value", {1, 0, 0, 1}}}));
  const double f = 0.100000001490116119384765625;
  EXPECT_NEAR(o[0], 1 / (1 + std::exp(-f)), 1e-15);
  EXPECT_GT(std::fabs(o[0] - 1 / (1 + std::exp(-0.1))), 1e-10);
}

TEST(IncreFlashAttentionV3Reference, mask_replaces_the_score) {
  // k1 = [3, 0] would dominate (s = [1, 3]); masking t = 1 replaces s1 by -1e12, exp(-1e12 - 1) = 0,
  // so o = v0 = [2, 0] exactly.
  const Params p = tiny().mask(DType::kU8, 2).build().first;
  const auto o = out_of(p, make_inputs(p, {{"query", kQ}, {"key", {1, 0, 3, 0}}, {"value", kV}, {"attenMask", {0, 1}}}));
  EXPECT_EQ(o, (std::vector<double>{2, 0}));
}

TEST(IncreFlashAttentionV3Reference, fully_masked_row_is_the_mean_of_v) {
  // Both scores become -1e12: a uniform softmax, o = (v0 + v1) / 2 = [1, 2] (spec §1.5 E2).
  const Params p = tiny().mask(DType::kBool).build().first;
  const auto o = out_of(p, make_inputs(p, {{"query", kQ}, {"key", kK}, {"value", kV}, {"attenMask", {1, 1}}}));
  EXPECT_EQ(o, (std::vector<double>{1, 2}));
}

TEST(IncreFlashAttentionV3Reference, pse_is_added_after_the_scale) {
  // D = 16 (pseShift needs D % 16 == 0), only the first two channels non-zero. scale 0.5,
  // q = [2, 0, ..]: 0.5 * q.k = [1, 0]; + pse [0, 1] = [1, 1] -> uniform -> o = [1, 2, 0, ..].
  // (Scaling pse too would give [1, 0.5].)
  const Params p = tiny().head_dim(16).scale(0.5).pse().build().first;
  auto pad = [](std::vector<double> v, size_t rows) {
    std::vector<double> out(rows * 16, 0.0);
    for (size_t r = 0; r < rows; ++r) std::copy(v.begin() + r * 2, v.begin() + r * 2 + 2, out.begin() + r * 16);
    return out;
  };
  const auto o = out_of(p, make_inputs(p, {{"query", pad({2, 0}, 1)}, {"key", pad({1, 0, 0, 0}, 2)},
                                            {"value", pad(kV, 2)}, {"pseShift", {0, 1}}}));
  EXPECT_EQ(o, pad({1, 2}, 1));
}

TEST(IncreFlashAttentionV3Reference, zero_length_gives_zeros) {
  const Params p = tiny().lengths({0}).build().first;
  const TensorMap in = make_inputs(p, {{"query", kQ}, {"key", kK}, {"value", kV}});
  const RefOutputs r = reference(p, in);
  EXPECT_EQ(values_of(r.expected.at("attentionOut")), (std::vector<double>{0, 0}));
  EXPECT_EQ(values_of(r.magnitude.at("attentionOut")), (std::vector<double>{0, 0}));
}

TEST(IncreFlashAttentionV3Reference, gqa_head_n_reads_kv_head_n_over_g) {
  // N = 4, N2 = 2, D = 1, S = 1: one position, so o = v of the head's KV head: v(n2 = 0) = 10,
  // v(n2 = 1) = 20 -> heads 0, 1 read 10 and heads 2, 3 read 20.
  const Params p = Builder().batch(1).heads(4, 2).head_dim(1).seq(1).layout("BSH").build().first;
  const auto o = out_of(p, make_inputs(p, {{"query", {1, 1, 1, 1}}, {"key", {1, 1}}, {"value", {10, 20}}}));
  EXPECT_EQ(o, (std::vector<double>{10, 10, 20, 20}));
}

TEST(IncreFlashAttentionV3Reference, int8_value_dequant_per_channel) {
  // One position: o_d = (v_d + off_d) * sc_d with v = [3, -4], value scales [0.5, 0.25], offsets
  // [-1, 2]: o = [(3 - 1) * 0.5, (-4 + 2) * 0.25] = [1, -0.5]. Row 0 holds the key parameters.
  const Params p = Builder().kv_dtype(DType::kI8).batch(1).heads(1).head_dim(2).seq(1).layout("BNSD")
                       .antiquant("per-channel", true).build().first;
  const auto o = out_of(p, make_inputs(p, {{"query", {1, 1}}, {"key", {5, 7}}, {"value", {3, -4}},
                                            {"antiquantScale", {1, 1, 0.5, 0.25}}, {"antiquantOffset", {0, 0, -1, 2}}}));
  EXPECT_EQ(o, (std::vector<double>{1, -0.5}));
}

TEST(IncreFlashAttentionV3Reference, int8_key_dequant_shifts_scores) {
  // Per-tensor key scale 2, offset -1: kdq = (k - 1) * 2. k0 = [1, 1] -> [0, 0], k1 = [2, 1] -> [2, 0];
  // q = [1, 0], scale 1: s = [0, 2], o = (v0 + e^2 v1) / (1 + e^2) with v = [1, 0] and [0, 1] (value
  // scale 1, offset 0): o = [1 / (1 + e^2), e^2 / (1 + e^2)].
  const Params p = Builder().kv_dtype(DType::kI8).batch(1).heads(1).head_dim(2).seq(2).layout("BSH").scale(1.0)
                       .antiquant("per-tensor", true).build().first;
  const auto o = out_of(p, make_inputs(p, {{"query", {1, 0}}, {"key", {1, 1, 2, 1}}, {"value", {1, 0, 0, 1}},
                                            {"antiquantScale", {2, 1}}, {"antiquantOffset", {-1, 0}}}));
  const double e2 = std::exp(2.0);
  EXPECT_NEAR(o[0], 1 / (1 + e2), 1e-15);
  EXPECT_NEAR(o[1], e2 / (1 + e2), 1e-15);
}

TEST(IncreFlashAttentionV3Reference, int8_output_quantisation_saturates) {
  // One position, o = v = [1.25, -20]; per-tensor scale 10, offset 0.5: x = [13, -199.5]; the
  // expected value is x clamped to [-128, 127] before rounding: [13, -128].
  const Params p = Builder().out_dtype(DType::kI8).batch(1).heads(1).head_dim(2).seq(1).layout("BNSD")
                       .quant("per-tensor", true).build().first;
  const auto o = out_of(p, make_inputs(p, {{"query", {0, 0}}, {"key", {0, 0}}, {"value", {1.25, -20}},
                                            {"quantScale2", {10}}, {"quantOffset2", {0.5}}}));
  EXPECT_EQ(o, (std::vector<double>{13, -128}));
}

TEST(IncreFlashAttentionV3Reference, per_channel_quant_uses_the_query_head) {
  // N = 2, N2 = 1, D = 1, one position with v = 1: head n outputs 1 * s[n] + off[n] with
  // s = [3, 5], off = [1, -1] -> [4, 4]. Indexing by the KV head would give [4, 6].
  const Params p = Builder().out_dtype(DType::kI8).batch(1).heads(2, 1).head_dim(1).seq(1).layout("BSND")
                       .quant("per-channel", true).build().first;
  const auto o = out_of(p, make_inputs(p, {{"query", {1, 1}}, {"key", {1}}, {"value", {1}}, {"quantScale2", {3, 5}},
                                            {"quantOffset2", {1, -1}}}));
  EXPECT_EQ(o, (std::vector<double>{4, 4}));
}

TEST(IncreFlashAttentionV3Reference, zero_length_int8_output_is_the_rounded_offset) {
  // L = 0: the zero row goes through the quantisation (crosscheck §8). o = 0 is exact, so the
  // §1.4.5 roundings are determined and the budget is 0. Per-tensor: rne(f16(off)):
  // 2.5 -> 2 (tie to even), -3.5 -> -4, 40.49 -> f16 40.5 -> 40.
  for (const auto& [off, want] : std::vector<std::pair<double, double>>{{2.5, 2}, {-3.5, -4}, {40.49, 40}}) {
    const Params p = Builder().out_dtype(DType::kI8).batch(1).heads(1).head_dim(1).seq(4).layout("BSH")
                         .lengths({0}).quant("per-tensor", true).build().first;
    const TensorMap in = make_inputs(p, {{"quantScale2", {3}}, {"quantOffset2", {off}}});
    EXPECT_EQ(out_of(p, in), (std::vector<double>{want})) << "offset " << off;
    EXPECT_EQ(values_of(reference(p, in).magnitude.at("attentionOut")), (std::vector<double>{0}));
  }
  // A per-tensor fp32 scale of 3e38 is Inf in half: 0 * Inf = NaN, which the int8 conversion makes
  // 0, whatever the offset (a --generate 2000 --extreme-fills case, issue 22).
  {
    const Params p = Builder().out_dtype(DType::kI8).batch(1).heads(1).head_dim(1).seq(4).layout("BSH")
                         .lengths({0}).quant("per-tensor", true).build().first;
    EXPECT_EQ(out_of(p, make_inputs(p, {{"quantScale2", {3e38}}, {"quantOffset2", {-1}}})), (std::vector<double>{0}));
  }
  // Per-channel: i8a(f16a(off)), half away from zero: 0.5 -> 1, -2.5 -> -3, -1.5 -> -2, 40.49 ->
  // f16a 40.5 -> 41 (a direct rounding of 40.49 would give 40), 300 -> 127.
  const Params q = Builder().out_dtype(DType::kI8).batch(1).heads(1).head_dim(5).seq(4).layout("BSH")
                       .lengths({0}).quant("per-channel", true).build().first;
  const auto o = out_of(q, make_inputs(q, {{"quantScale2", {3, 3, 3, 3, 3}}, {"quantOffset2", {0.5, -2.5, -1.5, 40.49, 300}}}));
  EXPECT_EQ(o, (std::vector<double>{1, -3, -2, 41, 127}));
}

TEST(IncreFlashAttentionV3Reference, effective_lengths_follow_section_1_3) {
  const Params list = Builder().batch(2).list({3, 5}).build().first;
  EXPECT_EQ(effective_lengths(list), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(effective_lengths(Builder().batch(2).list({3, 5}).lengths({2}).build().first), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(effective_lengths(Builder().batch(2).seq(9).lengths({1, 4, 99}).build().first), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(effective_lengths(Builder().batch(2).seq(9).lengths({}).build().first), (std::vector<int64_t>{9, 9}));
  // The longest: 5 of {3, 5}; 4 of {1, 4} (the 99 past the batch is not a length).
  EXPECT_EQ(longest_effective_length(list), 5);
  EXPECT_EQ(longest_effective_length(Builder().batch(2).seq(9).lengths({1, 4, 99}).build().first), 4);
}

TEST(IncreFlashAttentionV3Reference, a_saturated_int8_output_is_determined_by_its_side) {
  // As above with scale 1e30 and no offset: x = [1.25e30, -2e31], far beyond the int8 range on
  // either side of any error bound, so the kernel can return only [127, -128]: a zero allowance
  // (before issue 22 the allowance was |scale| * budget, wider than the whole int8 range).
  const Params p = Builder().out_dtype(DType::kI8).batch(1).heads(1).head_dim(2).seq(1).layout("BNSD")
                       .quant("per-tensor", false).build().first;
  const TensorMap in = make_inputs(p, {{"query", {0, 0}}, {"key", {0, 0}}, {"value", {1.25, -20}}, {"quantScale2", {1e30}}});
  const RefOutputs r = reference(p, in);
  EXPECT_EQ(values_of(r.expected.at("attentionOut")), (std::vector<double>{127, -128}));
  EXPECT_EQ(values_of(r.magnitude.at("attentionOut")), (std::vector<double>{0, 0}));
  EXPECT_TRUE(r.beyond_range.empty());
}

TEST(IncreFlashAttentionV3Reference, an_fp32_score_that_may_overflow_leaves_its_head_undefined) {
  // bf16, two heads of D = 2 over one KV head, S = 2: head 0 has q = [1.887e38, 0] and k0 =
  // [1.887e38, 0], so q k0 = 3.6e76 is Inf in fp32 (then Inf - Inf = NaN in the softmax): both of
  // its outputs are undefined and counted. Head 1 (q = [0, 1]): s = [0, 1], p = [e^-1, 1], so
  // o = [2 e^-1, 4] / (1 + e^-1), all in range.
  const double big = 0x1.1Cp127;  // a bf16 value
  const Params p = tiny().dtype(DType::kBF16).kv_dtype(DType::kBF16).out_dtype(DType::kBF16).heads(2, 1)
                       .build().first;
  const TensorMap in = make_inputs(p, {{"query", {big, 0, 0, 1}}, {"key", {big, 0, 0, 1}}, {"value", kV}});
  const RefOutputs r = reference(p, in);
  ASSERT_EQ(r.care.count("attentionOut"), 1u);
  EXPECT_EQ(values_of(r.care.at("attentionOut")), (std::vector<double>{0, 0, 1, 1}));
  ASSERT_EQ(r.beyond_range.count("attentionOut"), 1u);
  EXPECT_EQ(r.beyond_range.at("attentionOut").count, 2);
  const double e = std::exp(-1.0);
  EXPECT_NEAR(r.expected.at("attentionOut").get(2), 2 * e / (1 + e), 1e-15);
  EXPECT_NEAR(r.expected.at("attentionOut").get(3), 4 / (1 + e), 1e-15);
}

TEST(IncreFlashAttentionV3Reference, budget_of_a_single_position_row) {
  // L = 1: w = 1 and v = o, so the conditioning term is 0 and p = 1 has no flushed tail. The budget
  // is coef * |v| with tiles = 2 * ceil(1/512) + 2 = 4, depth = ceil(1/16) + 16 + 4 = 21 and
  // coef = 2^-11 + 2^-24 * (2 * 21 + 4 + 12) = (2^13 + 58) * 2^-24; in units of 2^-24 with
  // |v| = 2: 2 * 8250 = 16500.
  const Params p = tiny().seq(1).build().first;
  const RefOutputs r = reference(p, make_inputs(p, {{"query", kQ}, {"key", {1, 0}}, {"value", {2, 0}}}));
  EXPECT_EQ(values_of(r.magnitude.at("attentionOut")), (std::vector<double>{16500, 0}));
}

TEST(IncreFlashAttentionV3Reference, validation_boundaries) {
  auto code = [](const Builder& b) {
    const Params p = b.build().first;
    return validate(p, specs(p)).aclnn_code();
  };
  const Builder base = Builder().batch(2).heads(4, 2).head_dim(32).seq(64).layout("BNSD");
  EXPECT_EQ(code(base), 0);
  // V16: without page attention the mask needs max L (40), not S (64); an empty mask is ignored.
  EXPECT_EQ(code(Builder(base).lengths({40, 10}).mask().set("maskS", 40)), 0);
  EXPECT_EQ(code(Builder(base).lengths({40, 10}).mask().set("maskS", 39)), 561002);
  EXPECT_EQ(code(Builder(base).mask().set("maskS", 0)), 0);
  // V17: pse needs S even when L is shorter; dim0 may be 1.
  EXPECT_EQ(code(Builder(base).lengths({40, 10}).pse(1).set("pseS", 63)), 561002);
  EXPECT_EQ(code(Builder(base).pse(1)), 0);
  // pseShift needs D % 16 == 0, and an empty pse is checked like any other (ProcessPseShift).
  EXPECT_EQ(code(Builder(base).head_dim(24).pse()), 561002);
  EXPECT_EQ(code(Builder(base).pse().set("pseS", 0)), 561002);
  // V15: entries past B are not read.
  EXPECT_EQ(code(Builder(base).lengths({64, 0, -5, 1000})), 0);
  // V5: G = 64 is allowed, 128 is not.
  EXPECT_EQ(code(Builder(base).heads(64, 1)), 0);
  EXPECT_EQ(code(Builder(base).heads(128, 1)), 561002);
  // V21: int8 KV pages must be 32-aligned, fp16 16-aligned.
  const Builder paged = Builder().batch(2).heads(4, 2).head_dim(32).layout("BNSD").lengths({20, 20});
  EXPECT_EQ(code(Builder(paged).paged(16, true)), 0);
  EXPECT_EQ(code(Builder(paged).kv_dtype(DType::kI8).paged(16, true)), 561002);
  EXPECT_EQ(code(Builder(paged).kv_dtype(DType::kI8).paged(32, true)), 0);
}

TEST(IncreFlashAttentionV3Reference, json_binding_is_strict) {
  using incre_flash_attention_v3_testing::ifa_cases::from_json;
  EXPECT_NE(from_json({{"Bx", 1}}).status().message().find("params.Bx"), std::string::npos);
  EXPECT_NE(from_json({{"pseS", 4}}).status().message().find("params.pseS"), std::string::npos);
  EXPECT_NE(from_json({{"kvCache", "paged5d"}}).status().message().find("kvCache"), std::string::npos);
  EXPECT_NE(from_json({{"kvCache", "list"}}).status().message().find("kvSeqLens"), std::string::npos);
  // maskPrefix applies only with a mask, is a non-negative integer, and round-trips through to_json.
  EXPECT_NE(from_json({{"maskPrefix", 3}}).status().message().find("params.maskPrefix"), std::string::npos);
  EXPECT_NE(from_json({{"attenMask", true}, {"maskPrefix", -2}}).status().message().find("maskPrefix"), std::string::npos);
  const auto masked = from_json({{"attenMask", true}, {"maskPattern", "prefix"}, {"maskPrefix", 7}});
  ASSERT_TRUE(masked.has_value());
  EXPECT_EQ(masked->second.mask_prefix, 7);
  EXPECT_EQ(from_json(incre_flash_attention_v3_testing::ifa_cases::to_json(masked->first, masked->second))->second, masked->second);
  // The prefix pattern masks t < min(maskPrefix, L_b): L = (6, 3) with maskPrefix 4.
  const auto [p, k] = Builder().batch(2).heads(1).head_dim(16).seq(6).lengths({6, 3}).mask().mask_pattern("prefix")
                          .set("maskPrefix", 4).build();
  const TensorMap in = incre_flash_attention_v3_testing::ifa_cases::fill(p, k, specs(p), FillMode::kRealistic, 1).value();
  const std::vector<double> mask = values_of(in.at("attenMask"));
  EXPECT_EQ(std::vector<double>(mask.begin(), mask.begin() + 6), (std::vector<double>{1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(std::vector<double>(mask.begin() + 6, mask.begin() + 9), (std::vector<double>{1, 1, 1}));
  // Derived defaults: scaleValue = 1/sqrt(D), pseS = S, paged blockNum = need + need/4.
  const auto pk = from_json({{"D", 64}, {"S", 30}, {"pseShift", true}});
  ASSERT_TRUE(pk.has_value());
  EXPECT_EQ(pk->first.scale_value, 0.125);
  EXPECT_EQ(pk->first.pse_seq, 30);
  const auto paged = from_json({{"B", 2}, {"kvCache", "paged3d"}, {"blockSize", 16}, {"actualSeqLengths", {33, 64}}});
  ASSERT_TRUE(paged.has_value());
  EXPECT_EQ(paged->first.max_block_num_per_seq, 4);  // ceil(64 / 16)
  EXPECT_EQ(paged->first.block_num, 8);              // 3 + 4 blocks needed, plus max(1, 7 / 4)
}

}  // namespace
}  // namespace opgate::ref::incre_flash_attention_v3
