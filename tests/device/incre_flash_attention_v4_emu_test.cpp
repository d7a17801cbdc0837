// Tests of the aclnnIncreFlashAttentionV4 kernel emulation: emu within the compare plan on
// generated problems, the window read from the kvPaddingSize tensor, the tiling and flash-decode
// paths over a window that does not start at 0, and one exposing problem per catalogued defect.
#include "device/emu/incre_flash_attention_v4.h"

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cases/chooser.h"
#include "cases/registry.h"
#include "device/emu/incre_flash_attention_v3.h"
#include "tests/device/incre_flash_attention_v4_testing.h"

namespace opgate::emu::incre_flash_attention_v4 {
namespace {

using incre_flash_attention_v4_testing::compare;
using incre_flash_attention_v4_testing::filled;
using incre_flash_attention_v4_testing::run_device;
using incre_flash_attention_v4_testing::ifa4_cases::Builder;
namespace ifa4_cases = incre_flash_attention_v4_testing::ifa4_cases;
namespace ifa4_ref = ref::incre_flash_attention_v4;

TEST(IncreFlashAttentionV4Emu, within_the_plan_on_generated_problems) {
  int64_t checked = 0, shifted = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    RngChooser chooser(seed);
    const auto pk = ifa4_cases::from_json(ifa4_cases::generate(chooser)).value();
    for (const auto& w : ifa4_ref::windows(pk.first)) shifted += w.start > 0;
    for (FillMode mode : {FillMode::kExact, FillMode::kRealistic, FillMode::kAdversarial}) {
      const auto in = ifa4_cases::fill(pk.first, pk.second, ifa4_ref::specs(pk.first), mode, seed).value();
      const CompareResult r = compare(pk.first, ifa4_ref::reference(pk.first, in), run_device(pk.first, in), mode);
      EXPECT_TRUE(r.passed) << "seed " << seed << " " << fill_mode_name(mode) << ": " << r.message;
      checked += r.metrics.compared;
    }
  }
  EXPECT_GT(checked, 10000);
  EXPECT_GT(shifted, 20) << "the generator must produce windows that do not start at 0";
}

// The kernel takes the padding from the device tensor: the same params with a tensor holding 0
// instead of 2 move the window back to the end of the KV axis (the result changes).
TEST(IncreFlashAttentionV4Emu, padding_read_from_the_tensor) {
  Builder b;
  b.v3().batch(1).heads(1).head_dim(16).seq(12).layout("BNSD").lengths({4});
  const auto f = filled(b.padding(2), FillMode::kRealistic, 3);
  const Tensor right = run_device(f.p, f.in);
  TensorMap moved = layout::incre_flash_attention_v4::pack(f.p, f.in);
  moved.at("kvPaddingSize").set(0, 0.0);
  Tensor out = Tensor::zeros(right.dtype(), right.shape());
  TensorMap o{{"attentionOut", out}};
  ASSERT_TRUE(run(f.p, moved, o, "").is_ok());
  bool differs = false;
  for (int64_t i = 0; i < out.numel(); ++i) differs = differs || out.get(i) != right.get(i);
  EXPECT_TRUE(differs) << "the case's window is [6, 10); with 0 the kernel reads [8, 12), whose 10 and 11 are poisoned";
}

// A window that does not start at 0 through several S2 tiles (G = 10: 2048-position tiles) and
// through the flash-decode split (G = 1, L >= 2048, B*N2 = 1): emu within the plan.
TEST(IncreFlashAttentionV4Emu, tiles_and_splits_over_a_shifted_window) {
  Builder tiles;
  tiles.v3().batch(1).heads(10, 1).head_dim(16).seq(5000).layout("BNSD").lengths({4500});
  Builder splits;
  splits.v3().batch(1).heads(1).head_dim(16).seq(3000).layout("BSH").lengths({2600}).mask();
  for (Builder* b : {&tiles, &splits}) {
    const auto f = filled(b->padding(300), FillMode::kRealistic, 5);
    ASSERT_GT(ifa4_ref::windows(f.p)[0].start, 0);
    const auto sched = incre_flash_attention_v3::schedule(f.p.base);
    EXPECT_TRUE(sched.split_len > 0 || ifa4_ref::windows(f.p)[0].length > sched.tile);
    const RefOutputs r = ifa4_ref::reference(f.p, f.in);
    const CompareResult c = compare(f.p, r, run_device(f.p, f.in), FillMode::kRealistic);
    EXPECT_TRUE(c.passed) << c.message;
  }
}

// V4 runs V3's schedule: the ci tier has a window split by the all-vector ratio (B*N2 = 18 splits
// on 40 AIV under 0.5, not under the C+V template's 0.4).
TEST(IncreFlashAttentionV4Emu, ci_splits_a_window_by_the_all_vector_ratio) {
  auto cases = load_case_file(std::string(OPGATE_SOURCE_DIR) + "/cases/incre_flash_attention_v4/ci.json");
  ASSERT_TRUE(cases.has_value()) << cases.status().message();
  std::string ids;
  for (const Case& c : *cases) {
    const auto p = ifa4_cases::from_json(c.params).value().first.base;
    const int64_t bn = p.batch * ref::incre_flash_attention_v3::kv_heads(p);
    const auto s = incre_flash_attention_v3::schedule(p, find_soc("Ascend910B3").value());
    if (s.kernel == incre_flash_attention_v3::Template::kAllVector && bn >= 16 && bn < 20 && s.parts >= 2) ids += c.id;
  }
  EXPECT_NE(ids, "");
}

struct Exposure {
  std::string defect;
  Builder builder;
};

Builder bnsd(std::vector<int64_t> lengths, int64_t s) {
  Builder b;
  b.v3().batch(static_cast<int64_t>(lengths.size())).heads(2).head_dim(16).seq(s).layout("BNSD").lengths(lengths);
  return b;
}

std::vector<Exposure> exposures() {
  Builder no_lengths;
  no_lengths.v3().batch(2).heads(2).head_dim(16).seq(20).layout("BSH");
  Builder masked = bnsd({6, 9}, 24);
  masked.v3().mask().mask_pattern("random");
  return {
      {"ifa4.padding_ignored", bnsd({6, 9}, 24).padding(4)},
      {"ifa4.window_off_by_one", bnsd({6, 9}, 24).padding(4)},
      {"ifa4.window_one_longer", bnsd({6, 9}, 24).padding(4)},
      {"ifa4.padding_applied_on_right", bnsd({6, 9}, 24).padding(4)},
      {"ifa4.negative_padding_not_clamped", bnsd({6, 9}, 24).padding(-3)},
      {"ifa4.out_of_range_window_clamped", bnsd({6, 20}, 24).padding(8)},
      {"ifa4.padding_without_actual_seq_lengths", no_lengths.padding(3)},
      {"ifa4.mask_read_window_relative", masked.padding(4)},
  };
}

TEST(IncreFlashAttentionV4Emu, every_defect_has_an_exposing_problem) {
  const std::vector<Exposure> all = exposures();
  ASSERT_EQ(all.size(), defects().size());
  std::set<std::string> names;
  for (const DefectInfo& d : defects()) names.insert(d.name);
  for (const Exposure& e : all) {
    EXPECT_EQ(names.count(e.defect), 1u) << e.defect;
    for (FillMode mode : {FillMode::kExact, FillMode::kRealistic}) {
      const auto f = filled(e.builder, mode, 11);
      const RefOutputs r = ifa4_ref::reference(f.p, f.in);
      EXPECT_TRUE(compare(f.p, r, run_device(f.p, f.in), mode).passed) << e.defect << ": faithful emu fails";
      EXPECT_FALSE(compare(f.p, r, run_device(f.p, f.in, e.defect), mode).passed)
          << e.defect << " is not exposed (" << fill_mode_name(mode) << ")";
    }
  }
}

TEST(IncreFlashAttentionV4Emu, unknown_defect_is_an_error) {
  const auto f = filled(bnsd({2}, 4).padding(1), FillMode::kExact, 1);
  Tensor out = Tensor::zeros(DType::kF16, ifa4_ref::specs(f.p).at("attentionOut").shape);
  TensorMap o{{"attentionOut", out}};
  EXPECT_FALSE(run(f.p, layout::incre_flash_attention_v4::pack(f.p, f.in), o, "ifa4.no_such").is_ok());
}

}  // namespace
}  // namespace opgate::emu::incre_flash_attention_v4
