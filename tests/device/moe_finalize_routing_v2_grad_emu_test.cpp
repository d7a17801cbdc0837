// Tests of the MoeFinalizeRoutingV2Grad kernel emulation against the reference (routing-ops.md
// §3.3 numerics, §4 tolerance): bit-exact gradExpandedX, bounded gradScales, untouched unwritten
// memory, and one exposing case per catalogued defect.
#include "device/emu/moe_finalize_routing_v2_grad.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/device/moe_finalize_routing_v2_grad_testing.h"

namespace opgate::emu::moe_finalize_routing_v2_grad {
namespace {

namespace grad_ref = ref::moe_finalize_routing_v2_grad;
using grad_ref::Params;
using moe_finalize_routing_v2_grad_testing::Case;
using moe_finalize_routing_v2_grad_testing::count_violations;
using moe_finalize_routing_v2_grad_testing::kGradScales;
using moe_finalize_routing_v2_grad_testing::kGradX;
using moe_finalize_routing_v2_grad_testing::make_inputs;
using moe_finalize_routing_v2_grad_testing::make_poisoned_outputs;
using moe_finalize_routing_v2_grad_testing::poison_bits;
using moe_finalize_routing_v2_grad_testing::same_value;
using moe_finalize_routing_v2_grad_testing::Values;

TensorMap run_emu(const Case& c, const std::string& defect) {
  TensorMap out = make_poisoned_outputs(c.p);
  const Status s = run(c.p, make_inputs(c), out, defect);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return out;
}

int64_t violations_of(const Case& c, const std::string& defect) {
  return count_violations(c.p, make_inputs(c), run_emu(c, defect));
}

// The doc example (seed 002): mode 0, R = K = H = 2.
Case doc_case(DType t, bool bias) {
  Case c;
  c.p.num_rows = c.p.top_k = c.p.hidden = c.p.expert_num = 2;
  c.p.dtype = t;
  c.p.has_scales = true;
  c.p.has_bias = bias;
  c.v = {{0.3816, 0.3939, 0.8474, 0.1652},
         {1, 3, 0, 2},
         {0.6049, 0.3315, 0.4954, 0.3284, 0.7060, 0.4359, 0.6514, 0.9476},
         {0.4708, 0.0656, 0.9652, 0.9512},
         {0, 1, 0, 1},
         {0.6452, 0.1981, 0.4159, 0.9575}};
  return c;
}

// Mode 1, E = C = 2 with two dropped slots and two rows nobody addresses.
Case drop_pad_case(DType t) {
  Case c = doc_case(t, true);
  c.p.drop_pad_mode = 1;
  c.p.expert_capacity = 2;
  c.v.row_idx = {2, -1, 0, -1};
  return c;
}

// Mode 0, activeNum 3: slot 2 writes row 2 = activeNum - 1, slot 0 (row 3) is dropped.
Case active_num_case() {
  Case c = doc_case(DType::kF32, false);
  c.p.hidden = 1;
  c.p.active_num = 3;
  c.v = {{2, 5}, {3, 0, 2, 1}, {10, 20, 30}, {1, 2, 3, 4}, {}, {}};
  return c;
}

// One slot whose gradScales is sum_j x * 1 over `hidden` elements (gradY = 1, scale 1).
Case long_sum_case(DType t, int64_t hidden, double x) {
  Case c;
  c.p.hidden = hidden;
  c.p.dtype = t;
  c.p.has_scales = true;
  c.v = {std::vector<double>(static_cast<size_t>(hidden), 1.0),
         {0},
         std::vector<double>(static_cast<size_t>(hidden), x),
         {1.0},
         {},
         {}};
  return c;
}

// The doc case in fp16 with a NaN and an Inf in gradY row 0: both valid slots of row 0 carry
// them into gradExpandedX (NaN * s = NaN, Inf * s = +-Inf).
Case nan_case() {
  Case c = doc_case(DType::kF16, false);
  c.v.grad_y[0] = std::nan("");
  c.v.grad_y[1] = INFINITY;
  return c;
}

TEST(MoeFinalizeRoutingV2GradEmu, nan_and_inf_propagate_into_grad_expanded_x) {
  const Case c = nan_case();
  const TensorMap out = run_emu(c, "");
  // Slot 0 (r 0, k 0) writes row 1 and slot 1 (r 0, k 1) row 3: NaN in column 0, Inf in column 1.
  for (int64_t row : {1, 3}) {
    EXPECT_TRUE(std::isnan(out.at(kGradX).get(row * 2))) << row;
    EXPECT_TRUE(std::isinf(out.at(kGradX).get(row * 2 + 1))) << row;
  }
  EXPECT_EQ(violations_of(c, ""), 0);
}

// Issue 13: bias and expertIdx passed without scales are ignored: the result is the plain copy.
TEST(MoeFinalizeRoutingV2GradEmu, bias_without_scales_is_ignored) {
  Case c;
  c.p.num_rows = 2;
  c.p.hidden = 2;
  c.p.expert_num = 2;
  c.p.has_bias = true;
  c.v = {{1, 2, 3, 4}, {1, 0}, {}, {}, {0, 1}, {10, 20, 30, 40}};
  const SpecMap s = grad_ref::specs(c.p);
  ASSERT_TRUE(grad_ref::validate(c.p, s).is_ok());
  ASSERT_TRUE(grad_ref::check_data(c.p, make_inputs(c)).is_ok());
  const TensorMap out = run_emu(c, "");
  EXPECT_EQ(out.at(kGradX).get(0), 3.0);  // row 0 <- gradY row 1
  EXPECT_EQ(out.at(kGradX).get(3), 2.0);  // row 1 <- gradY row 0
  EXPECT_EQ(violations_of(c, ""), 0);
}

TEST(MoeFinalizeRoutingV2GradEmu, defect_catalogue_is_named_and_described) {
  const std::vector<DefectInfo> list = defects();
  EXPECT_GE(list.size(), 5u);
  std::set<std::string> names;
  for (const DefectInfo& d : list) {
    EXPECT_EQ(d.name.rfind("mfrg.", 0), 0u) << d.name;
    EXPECT_FALSE(d.description.empty()) << d.name;
    EXPECT_TRUE(names.insert(d.name).second) << "duplicate " << d.name;
  }
}

TEST(MoeFinalizeRoutingV2GradEmu, unknown_defect_is_internal_error) {
  const Case c = doc_case(DType::kF32, true);
  TensorMap out = make_poisoned_outputs(c.p);
  EXPECT_EQ(run(c.p, make_inputs(c), out, "mfrg.no_such_defect").code(), StatusCode::kInternal);
}

TEST(MoeFinalizeRoutingV2GradEmu, matches_reference_on_hand_cases) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (const Case& c : {doc_case(t, true), doc_case(t, false), drop_pad_case(t)}) {
      EXPECT_EQ(violations_of(c, ""), 0) << dtype_name(t) << " mode " << c.p.drop_pad_mode;
    }
    EXPECT_EQ(violations_of(long_sum_case(t, 13, 0.3), ""), 0) << dtype_name(t);
  }
  EXPECT_EQ(violations_of(active_num_case(), ""), 0);
}

TEST(MoeFinalizeRoutingV2GradEmu, grad_expanded_x_is_one_rounding_of_the_product) {
  const Case c = doc_case(DType::kBF16, true);
  const TensorMap out = run_emu(c, "");
  const TensorMap in = make_inputs(c);
  // Slot 0 writes row 1: bf16(bf16(0.4708) * bf16(0.3816)), rounded once from the exact product.
  const double exact = in.at("scalesOptional").get(0) * in.at("gradY").get(0);
  EXPECT_EQ(out.at(kGradX).get(2), round_to(DType::kBF16, exact));
}

TEST(MoeFinalizeRoutingV2GradEmu, several_hidden_chunks_stay_within_bound) {
  EXPECT_EQ(violations_of(long_sum_case(DType::kF32, 9000, 0.1), ""), 0);
  EXPECT_EQ(violations_of(long_sum_case(DType::kBF16, 9000, 0.1), ""), 0);
}

TEST(MoeFinalizeRoutingV2GradEmu, dropless_leaves_unaddressed_memory_untouched) {
  Case c = doc_case(DType::kF16, false);
  c.v.row_idx = {1, -1, 0, 2};  // row 3 is never written
  const TensorMap out = run_emu(c, "");
  for (int64_t j = 6; j < 8; ++j) EXPECT_EQ(out.at(kGradX).bits(j), poison_bits(DType::kF16));
  Case no_scales;
  no_scales.p.num_rows = 2;
  no_scales.v = {{1, 2}, {1, 0}, {}, {}, {}, {}};
  const TensorMap copy = run_emu(no_scales, "");
  EXPECT_EQ(copy.at(kGradX).get(0), 2.0);
  for (int64_t i = 0; i < 2; ++i) EXPECT_EQ(copy.at(kGradScales).bits(i), poison_bits(DType::kF32));
}

TEST(MoeFinalizeRoutingV2GradEmu, drop_pad_zero_fills_unaddressed_rows) {
  const TensorMap out = run_emu(drop_pad_case(DType::kBF16), "");
  for (int64_t j : {2, 3, 6, 7}) EXPECT_EQ(out.at(kGradX).bits(j), 0u) << j;
}

TEST(MoeFinalizeRoutingV2GradEmu, every_defect_is_caught_by_its_case) {
  const std::map<std::string, Case> exposing = {
      {"mfrg.scale_not_applied", doc_case(DType::kF32, true)},
      {"mfrg.bias_ignored_for_dropped", drop_pad_case(DType::kF32)},
      {"mfrg.zero_fill_skipped_in_drop_pad", drop_pad_case(DType::kF16)},
      {"mfrg.active_num_off_by_one", active_num_case()},
      {"mfrg.k_major_index", doc_case(DType::kF32, false)},
      // 256 x 0.1 summed in fp16 drifts by ~0.44; the fp32 bound is ~0.008.
      {"mfrg.grad_scales_half_accumulation", long_sum_case(DType::kF16, 256, 0.1)},
      {"mfrg.last_block_dropped", long_sum_case(DType::kF32, 12, 0.5)},
      {"mfrg.nan_flushed_to_zero", nan_case()},
  };
  // Pinned bit for bit by their own test: the bound of count_violations allows half an ulp.
  const std::set<std::string> pinned_elsewhere = {"mfrg.grad_scales_cast_half_away"};
  for (const DefectInfo& d : defects()) {
    if (pinned_elsewhere.count(d.name)) continue;
    const auto it = exposing.find(d.name);
    ASSERT_NE(it, exposing.end()) << "no exposing case for " << d.name;
    EXPECT_EQ(violations_of(it->second, ""), 0) << d.name;
    EXPECT_GT(violations_of(it->second, d.name), 0) << d.name << ": " << d.description;
  }
}

// 257 ones summed in fp32 are exactly 257, a tie between the bf16 values 256 and 258: CAST_RINT
// gives 256, a half-away cast 258 (the exact-fill cases check these bits).
TEST(MoeFinalizeRoutingV2GradEmu, grad_scales_cast_is_rne_at_a_tie) {
  const Case c = long_sum_case(DType::kBF16, 257, 1.0);
  EXPECT_EQ(run_emu(c, "").at(kGradScales).get(0), 256.0);
  EXPECT_EQ(run_emu(c, "mfrg.grad_scales_cast_half_away").at(kGradScales).get(0), 258.0);
}

}  // namespace
}  // namespace opgate::emu::moe_finalize_routing_v2_grad
