// Tests of the IncreFlashAttentionV3 kernel emulation (attention-and-ffn.md §1.4.3-§1.4.7): the
// schedule of §1.4.7, hand-worked roundings of the output casts and the quantisation arithmetic,
// emu within the compare plan on generated problems, and one exposing problem per defect.
#include "device/emu/incre_flash_attention_v3.h"

#include <cmath>

#include <gtest/gtest.h>

#include "tests/device/incre_flash_attention_v3_testing.h"

namespace opgate::emu::incre_flash_attention_v3 {
namespace {

using ifa_testing::compare;
using ifa_testing::filled;
using ifa_testing::make_inputs;
using ifa_testing::run_device;
using ifa_testing::values_of;
using ifa_testing::ifa_cases::Builder;
namespace ifa_ref = ref::incre_flash_attention_v3;

TEST(IncreFlashAttentionV3Emu, schedule_follows_section_1_4_7) {
  auto sched = [](const Builder& b) { return schedule(b.build().first); };
  // fp16, G = 1, B*N2 = 1 < 0.4 * 40 and G == 1: flash-decode with parts = 40, decreased while
  // 4096 / parts < 512 -> 8 parts of ceil(4096 / 8) = 512.
  const Schedule s1 = sched(Builder().batch(1).heads(1).head_dim(16).seq(4096));
  EXPECT_EQ(s1.tile, 8192);
  EXPECT_EQ(s1.split_len, 512);
  // G = 5 -> 4096-position tiles; G = 10 -> 2048. max L 1000 < 2048 with G > 1: no split.
  EXPECT_EQ(sched(Builder().batch(1).heads(5, 1).head_dim(16).seq(1000)).tile, 4096);
  EXPECT_EQ(sched(Builder().batch(1).heads(10, 1).head_dim(16).seq(1000)).tile, 2048);
  EXPECT_EQ(sched(Builder().batch(1).heads(10, 1).head_dim(16).seq(1000)).split_len, 0);
  // int8 KV with G > 1: 1024; with G == 1: 8192.
  EXPECT_EQ(sched(Builder().kv_dtype(DType::kI8).batch(1).heads(2, 1).head_dim(16).seq(8)).tile, 1024);
  EXPECT_EQ(sched(Builder().kv_dtype(DType::kI8).batch(1).heads(2).head_dim(16).seq(8)).tile, 8192);
  // B*N2 = 16 is not < 16: no split even for G == 1 and a long KV.
  EXPECT_EQ(sched(Builder().batch(2).heads(8).head_dim(16).seq(4096)).split_len, 0);
  // Page attention: tiles rounded down to blockSize multiples (8192 -> 8064 for 384); no split
  // while max L <= 1024; splits aligned up to blockSize: 3000 / 5 parts = 600 -> 768 (2 * 384).
  const Builder pa = Builder().batch(1).heads(1).head_dim(16).layout("BNSD").paged(384, true);
  EXPECT_EQ(sched(Builder(pa).lengths({1024})).tile, 8064);
  EXPECT_EQ(sched(Builder(pa).lengths({1024})).split_len, 0);
  EXPECT_EQ(sched(Builder(pa).lengths({3000})).split_len, 768);
}

TEST(IncreFlashAttentionV3Emu, fp16_output_rounds_half_away) {
  // Equal scores (q = 0): P = [1, 1], fp32 PV = 1 + (1 + 2^-10) = 2 + 2^-10 exactly, l = 2, o = 1 + 2^-11:
  // a tie between the fp16 neighbours 1 and 1 + 2^-10. CAST_ROUND takes 1 + 2^-10 (RNE would take 1).
  const auto p = Builder().batch(1).heads(2).head_dim(1).seq(2).layout("BSH").build().first;
  const Tensor o = run_device(p, make_inputs(p, {{"value", {1, 1 + 0x1p-10, 1, 1 + 0x1p-10}}}));
  EXPECT_EQ(values_of(o), (std::vector<double>{1 + 0x1p-10, 1 + 0x1p-10}));
}

TEST(IncreFlashAttentionV3Emu, bf16_output_rounds_to_nearest_even) {
  // Same with bf16 neighbours 1 and 1 + 2^-7: o = 1 + 2^-8 is a tie, CAST_RINT keeps the even 1.
  const auto p = Builder().dtype(DType::kBF16).batch(1).heads(1).head_dim(1).seq(2).layout("BSH").build().first;
  const Tensor o = run_device(p, make_inputs(p, {{"value", {1, 1 + 0x1p-7}}}));
  EXPECT_EQ(values_of(o), (std::vector<double>{1}));
}

TEST(IncreFlashAttentionV3Emu, int8_output_arithmetic) {
  // One position, o = 1 in both channels. Per channel (fp32, f16a, i8a): x = 1 * 2.5 = 2.5 -> 3 (ties
  // away). Per tensor (AscendQuant in half): f16(2.5) = 2.5, rne(2.5) = 2. With s = 2.5003: per
  // channel 2.5003 -> 3; per tensor f16(2.5003) = 2.5 (fp16 spacing 2^-9 at 2.5) -> 2.
  for (double s : {2.5, 2.5003}) {
    const auto pc = Builder().out_dtype(DType::kI8).batch(1).heads(1).head_dim(2).seq(1).layout("BSH")
                        .quant("per-channel", false).build().first;
    EXPECT_EQ(values_of(run_device(pc, make_inputs(pc, {{"value", {1, 1}}, {"quantScale2", {s, s}}}))),
              (std::vector<double>{3, 3}));
    const auto pt = Builder().out_dtype(DType::kI8).batch(1).heads(1).head_dim(2).seq(1).layout("BSH")
                        .quant("per-tensor", false).build().first;
    EXPECT_EQ(values_of(run_device(pt, make_inputs(pt, {{"value", {1, 1}}, {"quantScale2", {s}}}))),
              (std::vector<double>{2, 2}));
  }
}

TEST(IncreFlashAttentionV3Emu, msd_digits_of_p) {
  // int8 KV, D = 1, per-tensor scales: key 1, value 8. q = 1, k = [5, 0], scale 1: A = 1 is exact in
  // digits, s = [5, 0], e = [1, e^-5 = 0.006737947], l = 1.006737947, v = [0, 127]:
  // o = 8 * 127 * e^-5 / l = 6.79994. Two digits of e^-5: x = 127 e^-5 = 0.85572 -> 1, then
  // (0.85572 - 1) * 254 = -36.647 -> -37: P = (1 - 37/254) / 127 = 0.0067260 (error 1.2e-5), so
  // o = 8 * 127 * 0.0067260 / l = 6.7889, off by 0.011 (fp16 spacing there is 2^-8). A third digit
  // (innerPrecise 0) leaves 4e-8, and the fp16 output is within half a spacing of 6.79994.
  const double want = 8 * 127 * std::exp(-5.0) / (1 + std::exp(-5.0));
  for (int64_t ip : {1, 0}) {
    const auto p = Builder().kv_dtype(DType::kI8).batch(1).heads(1).head_dim(1).seq(2).layout("BSH").scale(1.0)
                       .inner_precise(ip).antiquant("per-tensor", false).build().first;
    const Tensor o = run_device(p, make_inputs(p, {{"query", {1}}, {"key", {5, 0}}, {"value", {0, 127}},
                                                   {"antiquantScale", {1, 8}}}));
    if (ip == 1) {
      EXPECT_NEAR(o.get(0), 6.7889, 0.002);
    } else {
      EXPECT_NEAR(o.get(0), want, 0x1p-9);
    }
  }
}

TEST(IncreFlashAttentionV3Emu, zero_length_rows) {
  // L = 0: fp16 rows are zeros; int8 per-tensor rows are rne(f16(0 * s) + f16(off)) = rne(-3.5) = -4.
  const auto p = Builder().batch(2).heads(1).head_dim(2).seq(4).layout("BSH").lengths({0, 4}).build().first;
  const Tensor o = run_device(p, make_inputs(p, {{"value", std::vector<double>(16, 1.0)}}));
  EXPECT_EQ(values_of(o), (std::vector<double>{0, 0, 1, 1}));
  const auto q = Builder().out_dtype(DType::kI8).batch(1).heads(1).head_dim(2).seq(4).layout("BSH").lengths({0})
                     .quant("per-tensor", true).build().first;
  EXPECT_EQ(values_of(run_device(q, make_inputs(q, {{"quantScale2", {7}}, {"quantOffset2", {-3.5}}}))),
            (std::vector<double>{-4, -4}));
}

TEST(IncreFlashAttentionV3Emu, within_the_plan_on_generated_problems) {
  int64_t checked = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    RngChooser chooser(seed);
    const auto pk = ifa_testing::ifa_cases::from_json(ifa_testing::ifa_cases::generate(chooser)).value();
    for (FillMode mode : {FillMode::kExact, FillMode::kRealistic, FillMode::kAdversarial}) {
      const auto in = ifa_testing::ifa_cases::fill(pk.first, pk.second, ifa_ref::specs(pk.first), mode, seed).value();
      const CompareResult r = compare(pk.first, ifa_ref::reference(pk.first, in), run_device(pk.first, in), mode);
      EXPECT_TRUE(r.passed) << "seed " << seed << " " << fill_mode_name(mode) << ": " << r.message;
      checked += r.metrics.compared;
    }
  }
  EXPECT_GT(checked, 10000);
}

// A generated int8-output check can fail: its widest tolerance (2 * 2^-24 * magnitude + 1/2) stays
// well inside the int8 range for every fill. Adversarial int8 KV with large key antiquant scales
// used to reach tolerances of 100-4000 (issue 12); the fill now keeps key codes and scales small.
TEST(IncreFlashAttentionV3Emu, generated_int8_output_tolerances_can_fail) {
  int64_t checked = 0;
  double widest = 0;
  for (uint64_t seed = 0; seed < 400 && checked < 40; ++seed) {
    RngChooser chooser(seed);
    const auto pk = ifa_testing::ifa_cases::from_json(ifa_testing::ifa_cases::generate(chooser)).value();
    if (pk.first.out_dtype != DType::kI8 || pk.first.kv_dtype != DType::kI8) continue;
    for (FillMode mode : {FillMode::kExact, FillMode::kRealistic, FillMode::kAdversarial}) {
      const auto in = ifa_testing::ifa_cases::fill(pk.first, pk.second, ifa_ref::specs(pk.first), mode, seed).value();
      const Tensor mag = ifa_ref::reference(pk.first, in).magnitude.at("attentionOut");
      for (int64_t i = 0; i < mag.numel(); ++i) widest = std::max(widest, 2 * 0x1p-24 * mag.get(i) + 0.5);
      ++checked;
    }
  }
  EXPECT_GE(checked, 40);
  EXPECT_LT(widest, 12) << "an int8 tolerance of " << widest << " steps";  // 8.9 at D = 128
}

// A problem that each defect gets wrong, with the reason.
struct Exposure {
  const char* defect;
  Builder builder;
  FillMode mode;
};

std::vector<Exposure> exposures() {
  const Builder gqa = Builder().batch(2).heads(4, 2).head_dim(32).seq(64).layout("BSH");
  const Builder prefix_masked_two_tiles = Builder().kv_dtype(DType::kI8).batch(1).heads(2, 1).head_dim(16).seq(1100)
                                              .layout("BSH").mask().mask_pattern("prefix").set("maskPrefix", 1024);
  const Builder fully_masked_split = Builder().batch(1).heads(1).head_dim(16).seq(1100).layout("BNSD").mask()
                                         .mask_pattern("all");
  return {
      // Batch 2 of 4 is fully masked (mixed pattern) and has huge, distinct scores: -1e12 added in
      // fp32 keeps their order (spacing 65536), so the row is not the mean of V.
      {"ifa.mask_added_not_replaced", Builder().batch(4).heads(2).head_dim(64).seq(64).layout("BNSD").mask(), FillMode::kAdversarial},
      {"ifa.pse_scaled", Builder(gqa).pse(), FillMode::kRealistic},
      {"ifa.gqa_n_mod_n2", gqa, FillMode::kRealistic},
      {"ifa.block_index_off_by_one", Builder().batch(2).heads(2).head_dim(32).layout("BNSD").paged(16, true).lengths({40, 20}), FillMode::kRealistic},
      {"ifa.actual_len_off_by_one", Builder(gqa).lengths({50, 10}), FillMode::kRealistic},
      // Scores of +-1e5: exp without the max overflows to inf, inf/inf = NaN.
      {"ifa.no_max_subtraction", gqa, FillMode::kAdversarial},
      {"ifa.quant_scale_kv_head", Builder(gqa).out_dtype(DType::kI8).quant("per-channel", true), FillMode::kRealistic},
      // 4096 positions in one tile with channel-biased values: fp16 partial sums lose ~2^-11 per add.
      {"ifa.fp16_pv_accumulation", Builder().batch(2).heads(16, 8).head_dim(64).seq(4096).layout("BNSD"), FillMode::kRealistic},
      {"ifa.fully_masked_row_zero", Builder(gqa).mask().mask_pattern("all"), FillMode::kRealistic},
      {"ifa.value_antiquant_offset_ignored", Builder(gqa).kv_dtype(DType::kI8).antiquant("per-channel", true), FillMode::kRealistic},
      // B*N2 = 1, L = 4096: 8 splits whose maxima differ.
      {"ifa.flash_decode_unweighted_combine", Builder().batch(1).heads(2, 1).head_dim(64).seq(4096).layout("BSH"), FillMode::kRealistic},
      {"ifa.bsh_kv_read_as_bnsd", gqa, FillMode::kRealistic},
      // int8 KV, G = 2: 1024-position tiles; L = 1100 with the first 1024 positions masked, so the
      // first tile ends with m = -1e12, l = 1024 and must be scaled by exp(-1e12 - m) = 0.
      {"ifa.tile_rescale_skipped", Builder(prefix_masked_two_tiles), FillMode::kRealistic},
      {"ifa.row_sum_not_rescaled", Builder(prefix_masked_two_tiles), FillMode::kRealistic},
      // B*N2 = 1, G = 1, L = 1100: two flash-decode splits of 550, both fully masked: the combine
      // of two equal -1e12 maxima must give the mean of V.
      {"ifa.masked_split_skipped_in_combine", fully_masked_split, FillMode::kRealistic},
      {"ifa.combine_max_from_zero", fully_masked_split, FillMode::kRealistic},
      // 96 heads (G = 1, fp16: the RNE P cast) of 64 channels: truncating P shrinks every output
      // by a fraction of an ulp, within the bound, but almost every nonzero error goes toward zero,
      // beyond the error-balance limit over 96 independent heads.
      {"ifa.p_cast_truncates", Builder().batch(6).heads(16).head_dim(64).seq(96).layout("BNSD"), FillMode::kRealistic},
  };
}

TEST(IncreFlashAttentionV3Emu, every_defect_has_an_exposing_problem) {
  const std::vector<Exposure> all = exposures();
  ASSERT_EQ(all.size(), defects().size());
  for (const Exposure& e : all) {
    const auto f = filled(e.builder, e.mode, 11);
    const RefOutputs r = ifa_ref::reference(f.p, f.in);
    EXPECT_TRUE(compare(f.p, r, run_device(f.p, f.in), e.mode).passed) << e.defect << ": faithful emu fails";
    EXPECT_FALSE(compare(f.p, r, run_device(f.p, f.in, e.defect), e.mode).passed) << e.defect << " is not exposed";
  }
}

}  // namespace
}  // namespace opgate::emu::incre_flash_attention_v3
