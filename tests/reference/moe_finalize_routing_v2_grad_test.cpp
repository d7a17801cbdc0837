// Tests of the MoeFinalizeRoutingV2Grad reference (routing-ops.md §3): the documented example
// (§3.5), hand-computed cases and the validation codes of §3.4 (the properties that check the
// gradient against the forward MoeFinalizeRoutingV2 of §2.2: tests/properties/).
#include "reference/moe_finalize_routing_v2_grad.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "reference/moe_finalize_routing_v2_grad/moe_finalize_routing_v2.h"
#include "tests/reference/moe_finalize_routing_v2_grad_testing.h"

namespace opgate::ref::moe_finalize_routing_v2_grad {
namespace {

namespace fwd = ref::moe_finalize_routing_v2_grad::forward;
using moe_finalize_routing_v2_grad_testing::forward;
using moe_finalize_routing_v2_grad_testing::forward_params;
using moe_finalize_routing_v2_grad_testing::make_inputs;
using moe_finalize_routing_v2_grad_testing::Problem;
using moe_finalize_routing_v2_grad_testing::Values;
using moe_finalize_routing_v2_grad_testing::values_of;

void expect_near_rel(const Tensor& got, const std::vector<double>& want, double rel) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < got.numel(); ++i) {
    EXPECT_NEAR(got.get(i), want[static_cast<size_t>(i)],
                rel * std::fabs(want[static_cast<size_t>(i)]))
        << "element " << i;
  }
}

Params doc_params(bool bias) {
  Params p;
  p.num_rows = 2;
  p.top_k = 2;
  p.hidden = 2;
  p.has_scales = true;
  p.has_bias = bias;
  p.expert_num = 2;
  return p;
}

// The official doc's example (seed 002), inputs stored as fp32.
Values doc_values() {
  return {{0.3816, 0.3939, 0.8474, 0.1652},
          {1, 3, 0, 2},
          {0.6049, 0.3315, 0.4954, 0.3284, 0.7060, 0.4359, 0.6514, 0.9476},
          {0.4708, 0.0656, 0.9652, 0.9512},
          {0, 1, 0, 1},
          {0.6452, 0.1981, 0.4159, 0.9575}};
}

TEST(MoeFinalizeRoutingV2GradReference, doc_example_with_bias) {
  const Params p = doc_params(true);
  const TensorMap in = make_inputs(p, doc_values());
  ASSERT_TRUE(validate(p, specs(p)).is_ok());
  ASSERT_TRUE(check_data(p, in).is_ok());
  const RefOutputs out = reference(p, in);
  expect_near_rel(
      out.expected.at("gradExpandedXOut"),
      {0.8179105, 0.159451, 0.1796573, 0.1854481, 0.8060469, 0.1571382, 0.02503296, 0.02583984},
      1e-6);
  expect_near_rel(out.expected.at("gradScalesOut"), {0.6426413, 1.157701, 1.146825, 1.180888},
                  1e-6);
  // Row 1 is slot 0: the exact product of the fp32 inputs, which the device rounds once.
  EXPECT_EQ(out.expected.at("gradExpandedXOut").get(2),
            static_cast<double>(0.4708f) * static_cast<double>(0.3816f));
}

TEST(MoeFinalizeRoutingV2GradReference, grad_scales_beyond_the_kernels_fp32_range_are_undefined_and_counted) {
  // The doc example with bias[expert 0][0] = x[row 1][0] = 3e38 and gradY[token 0][0] = 0:
  // slot 0 (row 1, expert 0): x + bias = 6e38 is Inf in fp32 (Inf * 0 = NaN), although the exact
  // sum of (x + b) * g, 0.3939 * (0.3284 + 0.1981), is small; slot 2 (row 0, expert 0):
  // (0.6049 + 3e38) * 0.8474 = 2.5e38 >= FLT_MAX / 2, so some fp32 order of the sum may overflow.
  // Slot 1 (row 3, expert 1) is 0 * (..) + 0.3939 * (0.9476 + 0.9575); slot 3 the doc's value.
  const Params p = doc_params(true);
  Values v = doc_values();
  v.grad_y[0] = 0;
  v.expanded_x[2] = 3e38;
  v.bias[0] = 3e38;
  const RefOutputs out = reference(p, make_inputs(p, v));
  const Tensor& care = out.care.at("gradScalesOut");
  EXPECT_EQ(values_of(care), (std::vector<double>{0, 1, 0, 1}));
  ASSERT_EQ(out.beyond_range.count("gradScalesOut"), 1u);
  EXPECT_EQ(out.beyond_range.at("gradScalesOut").count, 2);
  EXPECT_NE(out.beyond_range.at("gradScalesOut").reason.find("overflow"), std::string::npos);
  EXPECT_EQ(out.beyond_range.count("gradExpandedXOut"), 0u);
  EXPECT_NEAR(out.expected.at("gradScalesOut").get(1), 0.3939 * (0.9476 + 0.9575), 1e-6);
  EXPECT_NEAR(out.expected.at("gradScalesOut").get(3), 1.180888, 1e-6);
  // Without the huge bias nothing is beyond the range.
  EXPECT_TRUE(reference(p, make_inputs(p, doc_values())).beyond_range.empty());
}

TEST(MoeFinalizeRoutingV2GradReference, doc_example_without_bias) {
  const Params p = doc_params(false);
  const RefOutputs out = reference(p, make_inputs(p, doc_values()));
  expect_near_rel(out.expected.at("gradScalesOut"), {0.3184014, 0.6218339, 0.5673561, 0.670275},
                  1e-6);
  EXPECT_DOUBLE_EQ(out.magnitude.at("gradScalesOut").get(0),
                   out.expected.at("gradScalesOut").get(0));
}

TEST(MoeFinalizeRoutingV2GradReference, doc_example_forward_mode2) {
  const Problem c = {doc_params(true), doc_values()};
  const fwd::Params f = forward_params(c.p, DType::kF32);
  ASSERT_TRUE(fwd::validate(f, fwd::specs(f)).is_ok());
  const std::vector<double> want = {0.6070094, 0.3728508, 2.273748, 1.836572};
  const std::vector<double> got = forward(c, c.v.expanded_x, c.v.scales, DType::kF32);
  for (size_t j = 0; j < want.size(); ++j) EXPECT_NEAR(got[j], want[j], 1e-6 * want[j]) << j;
}

// Mode 1, E = C = 2, H = 2, K = 2; idx {2, -1, 0, -1}, expertIdx {1, 0, 0, 1}, bias [[.5, 0], [1,
// 2]]
//   slot 0 (r 0, row 2, s 2):   gradX[2] = 2*[1, 2] = [2, 4]; gradS = ([2, 1]+[1, 2]).[1, 2] = 9
//   slot 1 (r 0, dropped):      gradS = bias[0].[1, 2] = 0.5
//   slot 2 (r 1, row 0, s .5):  gradX[0] = .5*[3, 4] = [1.5, 2]; gradS = ([1, 1]+[.5, 0]).[3, 4]
//   = 8.5 slot 3 (r 1, dropped):      gradS = bias[1].[3, 4] = 11 rows 1 and 3 are addressed by
//   nobody: zero-filled and defined.
// Without bias: gradS = [[2, 1].[1, 2], 0, [1, 1].[3, 4], 0] = [4, 0, 7, 0].
TEST(MoeFinalizeRoutingV2GradReference, drop_pad_zero_fill_and_dropped_bias) {
  Params p = doc_params(true);
  p.drop_pad_mode = 1;
  p.expert_capacity = 2;
  const Values v = {{1, 2, 3, 4},  {2, -1, 0, -1}, {1, 1, 5, 5, 2, 1, 7, 7},
                    {2, 3, .5, 4}, {1, 0, 0, 1},   {.5, 0, 1, 2}};
  ASSERT_TRUE(validate(p, specs(p)).is_ok());
  ASSERT_TRUE(check_data(p, make_inputs(p, v)).is_ok());
  RefOutputs out = reference(p, make_inputs(p, v));
  EXPECT_EQ(values_of(out.expected.at("gradExpandedXOut")),
            (std::vector<double>{1.5, 2, 0, 0, 2, 4, 0, 0}));
  EXPECT_EQ(values_of(out.care.at("gradExpandedXOut")), std::vector<double>(8, 1.0));
  EXPECT_EQ(values_of(out.expected.at("gradScalesOut")), (std::vector<double>{9, 0.5, 8.5, 11}));
  p.has_bias = false;
  out = reference(p, make_inputs(p, v));
  EXPECT_EQ(values_of(out.expected.at("gradScalesOut")), (std::vector<double>{4, 0, 7, 0}));
}

// Mode 0, R = 2, K = 2, H = 1, activeNum 3 (so D0 = 3); idx {3, 0, 2, 1}; gradY [2, 5];
// scales [1, 2, 3, 4]; expandedX [10, 20, 30].
//   slot 0: row 3 >= activeNum, dropped: gradS 0.   slot 1: gradX[0] = 2*2 = 4, gradS = 10*2 = 20
//   slot 2: gradX[2] = 3*5 = 15, gradS = 30*5 = 150  slot 3: gradX[1] = 4*5 = 20, gradS = 20*5 =
//   100
TEST(MoeFinalizeRoutingV2GradReference, active_num_drops_high_rows) {
  Params p = doc_params(false);
  p.hidden = 1;
  p.active_num = 3;
  const Values v = {{2, 5}, {3, 0, 2, 1}, {10, 20, 30}, {1, 2, 3, 4}, {}, {}};
  ASSERT_TRUE(validate(p, specs(p)).is_ok());
  ASSERT_TRUE(check_data(p, make_inputs(p, v)).is_ok());
  const RefOutputs out = reference(p, make_inputs(p, v));
  EXPECT_EQ(values_of(out.expected.at("gradExpandedXOut")), (std::vector<double>{4, 20, 15}));
  EXPECT_EQ(values_of(out.care.at("gradExpandedXOut")), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(values_of(out.expected.at("gradScalesOut")), (std::vector<double>{0, 20, 150, 100}));
}

// Mode 0, R = 1, K = 2, H = 2, idx {-1, 1}: row 0 is never written, so it is undefined (care 0).
TEST(MoeFinalizeRoutingV2GradReference, dropless_unaddressed_row_is_undefined) {
  Params p = doc_params(false);
  p.num_rows = 1;
  const Values v = {{1, 2}, {-1, 1}, {3, 4, 5, 6}, {2, 3}, {}, {}};
  const RefOutputs out = reference(p, make_inputs(p, v));
  EXPECT_EQ(values_of(out.care.at("gradExpandedXOut")), (std::vector<double>{0, 0, 1, 1}));
  EXPECT_EQ(values_of(out.expected.at("gradExpandedXOut")), (std::vector<double>{0, 0, 3, 6}));
  // slot 1: [5, 6].[1, 2] = 17; slot 0 dropped without bias: 0.
  EXPECT_EQ(values_of(out.expected.at("gradScalesOut")), (std::vector<double>{0, 17}));
}

// The kernel skips a dropped slot without bias, so its gradScales is 0 even if gradY is Inf
// (0 * Inf would be NaN); the valid slot propagates the Inf: [5, 6].[Inf, 2] = Inf.
TEST(MoeFinalizeRoutingV2GradReference, dropped_slot_ignores_non_finite_grad_y) {
  Params p = doc_params(false);
  p.num_rows = 1;
  const double inf = std::numeric_limits<double>::infinity();
  const RefOutputs out =
      reference(p, make_inputs(p, {{inf, 2}, {-1, 1}, {3, 4, 5, 6}, {2, 3}, {}, {}}));
  EXPECT_EQ(values_of(out.expected.at("gradScalesOut")), (std::vector<double>{0, inf}));
}

// No scales: K = 1, gradX[idx[r]] = gradY[r] (a copy), gradScalesOut (R, 1) is not written.
TEST(MoeFinalizeRoutingV2GradReference, no_scales_copies_grad_y) {
  Params p;
  p.num_rows = 3;
  p.hidden = 2;
  const Values v = {{1, 2, 3, 4, 5, 6}, {2, 0, 1}, {}, {}, {}, {}};
  ASSERT_TRUE(validate(p, specs(p)).is_ok());
  const RefOutputs out = reference(p, make_inputs(p, v));
  EXPECT_EQ(values_of(out.expected.at("gradExpandedXOut")),
            (std::vector<double>{3, 4, 5, 6, 1, 2}));
  EXPECT_EQ(out.care.at("gradScalesOut").shape(), (Shape{3, 1}));
  EXPECT_EQ(values_of(out.care.at("gradScalesOut")), (std::vector<double>{0, 0, 0}));
}

// Issue 13: bias and expertIdx without scales are a valid call (the tiling reads bias only under
// scales); the kernel copies gradY and ignores both, even an expert id it would read out of range.
TEST(MoeFinalizeRoutingV2GradReference, bias_without_scales_is_accepted_and_ignored) {
  Params p;
  p.num_rows = 3;
  p.hidden = 2;
  p.has_bias = true;
  p.expert_num = 2;
  const Values v = {{1, 2, 3, 4, 5, 6}, {2, 0, 1}, {}, {}, {0, 1, 7}, {10, 20, 30, 40}};
  ASSERT_TRUE(validate(p, specs(p)).is_ok());
  const TensorMap in = make_inputs(p, v);
  ASSERT_TRUE(check_data(p, in).is_ok());
  const RefOutputs out = reference(p, in);
  EXPECT_EQ(values_of(out.expected.at("gradExpandedXOut")), (std::vector<double>{3, 4, 5, 6, 1, 2}));
  EXPECT_EQ(values_of(out.care.at("gradScalesOut")), (std::vector<double>{0, 0, 0}));
}

// A call whose descriptors were tampered with after specs(p).
struct Tampered {
  const char* what;
  Params p;
  std::function<void(SpecMap&)> edit;
};

void expect_rejected(int64_t code, const std::vector<Tampered>& calls) {
  for (const Tampered& c : calls) {
    SpecMap s = specs(c.p);
    if (c.edit) c.edit(s);
    const Status st = validate(c.p, s);
    EXPECT_EQ(st.code(), StatusCode::kAclnnError) << c.what << ": " << st.to_string();
    EXPECT_EQ(st.aclnn_code(), code) << c.what << ": " << st.to_string();
  }
}

TEST(MoeFinalizeRoutingV2GradReference, validate_accepts_well_formed_calls) {
  for (int64_t mode : {0, 1}) {
    for (bool bias : {false, true}) {
      for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
        Params p = doc_params(bias);
        p.drop_pad_mode = mode;
        p.dtype = t;
        p.expert_capacity = 3;
        p.active_num = 3;
        EXPECT_TRUE(validate(p, specs(p)).is_ok()) << validate(p, specs(p)).to_string();
      }
    }
  }
}

TEST(MoeFinalizeRoutingV2GradReference, validate_null_tensors_161001) {
  const Params p = doc_params(true);
  expect_rejected(161001, {{"gradY", p, [](SpecMap& s) { s["gradY"].present = false; }},
                           {"gradScalesOut", p, [](SpecMap& s) { s.erase("gradScalesOut"); }}});
}

TEST(MoeFinalizeRoutingV2GradReference, validate_dtypes_161002) {
  const Params p = doc_params(true);
  expect_rejected(161002,
                  {{"gradY i32", p, [](SpecMap& s) { s["gradY"].dtype = DType::kI32; }},
                   {"rowIdx i64", p, [](SpecMap& s) { s["expandedRowIdx"].dtype = DType::kI64; }},
                   {"bias f16", p, [](SpecMap& s) { s["biasOptional"].dtype = DType::kF16; }}});
}

TEST(MoeFinalizeRoutingV2GradReference, validate_attrs_and_shapes_561103) {
  const Params p = doc_params(true);
  Params mode2 = p, no_capacity = p, pad = p, no_scales, empty = p;
  mode2.drop_pad_mode = 2;
  no_capacity.drop_pad_mode = 1;
  no_capacity.expert_capacity = 0;
  pad.drop_pad_mode = 1;
  pad.expert_capacity = 2;
  no_scales.num_rows = no_scales.top_k = 2;  // K must be 1 without scales
  empty.hidden = 0;  // expandedX is empty: the aclnn layer skips its dtype, tiling does not
  expect_rejected(
      561103,
      {{"dropPadMode 2", mode2, nullptr},
       {"expertCapacity 0", no_capacity, nullptr},
       {"K without scales", no_scales, nullptr},
       {"scales without x", p, [](SpecMap& s) { s["expandedXOptional"].present = false; }},
       {"bias without ids", p, [](SpecMap& s) { s["expertIdxOptional"].present = false; }},
       {"scales 1-D", p, [](SpecMap& s) { s["scalesOptional"].shape = {4}; }},
       {"bias dim1", p,
        [](SpecMap& s) {
          s["biasOptional"].shape = {2, 3};
        }},
       {"gradScales dtype", p, [](SpecMap& s) { s["gradScalesOut"].dtype = DType::kF16; }},
       {"mode 1 out 2-D", pad,
        [](SpecMap& s) {
          s["gradExpandedXOut"].shape = {4, 2};
        }},
       {"mode 1 bias rows", pad,
        [](SpecMap& s) {
          s["biasOptional"].shape = {3, 2};
        }},
       {"empty x dtype", empty, [](SpecMap& s) { s["expandedXOptional"].dtype = DType::kF16; }}});
  SpecMap s = specs(p);
  s["gradExpandedXOut"].shape = {5, 2};
  const Status st = validate(p, s);
  EXPECT_EQ(st.aclnn_code(), 561103);
  EXPECT_NE(st.message().find("gradExpandedXOut.dim0 (5) != D0 (4)"), std::string::npos)
      << st.to_string();
}

TEST(MoeFinalizeRoutingV2GradReference, check_data_rejects_undefined_inputs) {
  const Params p = doc_params(true);
  Values v = doc_values();
  v.expert_idx[2] = 2;  // E = 2
  EXPECT_EQ(check_data(p, make_inputs(p, v)).code(), StatusCode::kInvalidCase);
  v = doc_values();
  v.row_idx = {1, 3, 1, 2};  // row 1 written twice
  EXPECT_EQ(check_data(p, make_inputs(p, v)).code(), StatusCode::kInvalidCase);
  v.row_idx = {1, 3, 0, 4};  // beyond R*K - 1
  EXPECT_EQ(check_data(p, make_inputs(p, v)).code(), StatusCode::kInvalidCase);
  Params active = p;
  active.active_num = 2;  // rows 2, 3 are dropped, not out of range
  v = doc_values();
  v.expanded_x.resize(4);
  EXPECT_TRUE(check_data(active, make_inputs(active, v)).is_ok());
}

TEST(MoeFinalizeRoutingV2GradReference, forward_validate_codes) {
  fwd::Params f;
  f.num_rows = 2;
  f.top_k = 2;
  f.hidden = 3;
  f.has_scales = f.has_bias = f.has_x1 = true;
  f.expert_num = 2;
  for (int64_t mode : {0, 1, 2, 3}) {
    f.drop_pad_mode = mode;
    f.expanded_rows = 4;
    EXPECT_TRUE(fwd::validate(f, fwd::specs(f)).is_ok()) << mode;
  }
  SpecMap s = fwd::specs(f);
  s["out"].present = false;
  EXPECT_EQ(fwd::validate(f, s).aclnn_code(), 161001);
  s = fwd::specs(f);
  s["x1Optional"].dtype = DType::kF16;
  EXPECT_EQ(fwd::validate(f, s).aclnn_code(), 161002);
  f.drop_pad_mode = 4;
  EXPECT_EQ(fwd::validate(f, fwd::specs(f)).aclnn_code(), 561103);
}

}  // namespace
}  // namespace opgate::ref::moe_finalize_routing_v2_grad
