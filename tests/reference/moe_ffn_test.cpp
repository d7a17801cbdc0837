// Tests of the MoeFFN reference (spec attention-and-ffn.md §2): hand-computed examples per path, the
// validation order and codes of §2.9 and the error-budget helpers. The properties (suite
// MoeFFNProps) are in tests/device/moe_ffn_props_test.cpp.
#include "reference/moe_ffn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cases/moe_ffn.h"
#include "core/parallel.h"
#include "reference/moe_ffn/moe_ffn_bound.h"
#include "reference/math/shared_simd.h"
#include "reference/moe_ffn/moe_ffn_lanes.h"
#include "reference/moe_ffn/moe_ffn_lanes_paths.h"
#include "tests/reference/moe_ffn_testing.h"

namespace opgate::ref::moe_ffn {
namespace {

namespace mc = cases::moe_ffn;

using moe_ffn_testing::make_inputs;
using moe_ffn_testing::Values;

std::vector<double> values_of(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get(i);
  return v;
}

Params params(DType dtype, std::vector<int64_t> tokens, int64_t k1, int64_t n1, const char* act) {
  auto b = mc::Builder().dtype(dtype).tokens(std::move(tokens)).k1(k1).n1(n1).activation(act);
  return b.build().first;
}

// relu, fp16, two experts with one token each, K1 = N1 = 2.
//   token 0, expert 0: h = [1, 2] I + [0, -3] = [1, -1]; a = [1, 0];
//                      y = [1, 0] [[1, 2], [3, 4]] + [0.5, 0] = [1.5, 2]
//   token 1, expert 1: h = [3, -1] [[1, 1], [1, -1]] + [0, 1] = [2, 5]; a = [2, 5];
//                      y = [2, 5] I + [0, -1] = [2, 4]
TEST(MoeFFNReference, relu_two_experts_by_hand) {
  Params p = params(DType::kF16, {1, 1}, 2, 2, "relu");
  p.has_bias1 = p.has_bias2 = true;
  const Values v{{1, 2, 3, -1}, {1, 0, 0, 1, 1, 1, 1, -1}, {0, -3, 0, 1}, {1, 2, 3, 4, 1, 0, 0, 1},
                 {0.5, 0, 0, -1}, {}, {}, {}, {}};
  const TensorMap in = make_inputs(p, v);
  ASSERT_TRUE(validate(p, specs(p)).is_ok()) << validate(p, specs(p)).to_string();
  ASSERT_TRUE(check_data(p, in).is_ok());
  const RefOutputs r = reference(p, in);
  EXPECT_EQ(values_of(r.expected.at("y")), (std::vector<double>{1.5, 2, 2, 4}));
  // Integers and halves: every step is exact on the device, so the budget is 0.
  EXPECT_EQ(values_of(r.magnitude.at("y")), (std::vector<double>(4, 0.0)));
}

// fastgelu, one token: y = 2 * 1 / (1 + e^-1.702) + 0.5 = 2 * 0.845795765932821 + 0.5
//                        = 2.191591531865642 (e^-1.702 = 0.182318522128221).
// The half-precision kernel (FasterGelu on fp16, -1.702 -> -1.7021484375) gives a = 0.845703125 and
// y = f16(2 * 0.845703125 + 0.5) = 2.19140625; the budget must cover the difference.
TEST(MoeFFNReference, fastgelu_single_value_and_budget) {
  Params p = params(DType::kF16, {1}, 1, 1, "fastgelu");
  p.has_bias2 = true;
  const RefOutputs r = reference(p, make_inputs(p, {{1}, {1}, {}, {2}, {0.5}, {}, {}, {}, {}}));
  const double y = r.expected.at("y").get(0);
  EXPECT_NEAR(y, 2.191591531865642, 1e-14);
  const double budget = r.magnitude.at("y").get(0);
  EXPECT_GT(budget, 0.0);
  EXPECT_LT(budget, 0.01);
  EXPECT_LE(std::fabs(2.19140625 - y), budget + ulp(DType::kF16, y) / 2);
}

// int8, relu, one token, K1 = 2, N1 = 1, per-tensor scale 2:
//   acc1 = 2*3 + (-1)*4 + 1 = 3; h = 3 * 0.5 = 1.5; a = 1.5
//   offset +0.5: q = 1.5*2 + 0.5 = 3.5 -> rne 4; acc2 = 4 [1, -2] + [1, 0] = [5, -8]; y = [1.25, -2]
//   offset -0.5: q = 2.5 -> rne 2 (ties to even); acc2 = [3, -4]; y = [0.75, -1]
TEST(MoeFFNReference, int8_requantisation_ties_to_even) {
  Params p = params(DType::kI8, {1}, 2, 1, "relu");
  p.has_bias1 = p.has_bias2 = true;
  Values v{{2, -1}, {3, 4}, {1}, {1, -2}, {1, 0}, {2}, {0.5}, {0.5f}, {0.25f, 0.25f}};
  RefOutputs r = reference(p, make_inputs(p, v));
  EXPECT_EQ(values_of(r.expected.at("y")), (std::vector<double>{1.25, -2}));
  EXPECT_EQ(values_of(r.magnitude.at("y")), (std::vector<double>{0, 0}));
  v.offset = {-0.5};
  r = reference(p, make_inputs(p, v));
  EXPECT_EQ(values_of(r.expected.at("y")), (std::vector<double>{0.75, -1}));
}

// A negative deqScale2 with acc2 beyond 2^24. relu, x = 3, W1 = 1, W2 = 1, bias2 = 2^25 + 2:
// acc2 = 2^25 + 5, which fp32 holds only as 2^25 + 4 (spacing 4 there). The kernel dequantises
// float(acc2) (spec §2.7), so the product before y's own rounding is (2^25 + 4) * -0.25 =
// -(2^23 + 1), determined (the earlier reference paid 0.25 of budget for the conversion instead):
// the expected value is that product and the budget 0, never negative whatever the sign of deq.
TEST(MoeFFNReference, int8_negative_deq_scale_dequantises_the_fp32_accumulator) {
  Params p = params(DType::kI8, {1}, 1, 1, "relu");
  p.has_bias2 = true;
  const double acc = std::ldexp(1.0, 25) + 5;
  const RefOutputs r = reference(p, make_inputs(p, {{3}, {1}, {}, {1}, {acc - 3}, {1}, {0}, {1.0f}, {-0.25f}}));
  EXPECT_EQ(r.expected.at("y").get(0), -(std::ldexp(1.0, 23) + 1));
  EXPECT_EQ(r.magnitude.at("y").get(0), 0.0);
}

// The hidden value is dequantised from float(acc1) (spec §2.7): with acc1 = 2^24 + 2^13 + 1 (an
// fp32 tie, RNE -> 2^24 + 2^13) and deqScale1 = 2^-20, h = 16 + 2^-7 exactly, an fp16 midpoint
// that RNE sends to 16; f16(16 * 6.28125) = 100.5 ties to aq = 100, and y = 100 * 1. Every step is
// determined, so the budget is 0. (From acc1 itself, h = 16 + 2^-7 + 2^-20 would give 16 + 2^-6,
// aq = 101: a kernel that skips the conversion must fail here.)
TEST(MoeFFNReference, int8_hidden_dequantises_the_fp32_accumulator) {
  Params p = params(DType::kI8, {1}, 1, 1, "relu");
  p.has_bias1 = true;
  const RefOutputs r = reference(p, make_inputs(p, moe_ffn_testing::acc1_midpoint_values()));
  EXPECT_EQ(r.expected.at("y").get(0), 100.0);
  EXPECT_EQ(r.magnitude.at("y").get(0), 0.0);
}

// Beyond the kernel's range (issue 22). bf16 relu, one token, K1 = N1 = 1: x = W1 = 1.887e38 gives
// h = 3.6e76, which overflows the fp32 mm1 accumulator (and bf16), so y = relu(h) * 0.5 is finite
// in double but a correct kernel returns Inf or NaN there: care 0, a zero magnitude, counted. With
// x = 1 and W1 = 1.887e38 / 4, below FLT_MAX / 2, nothing is beyond the range and y = 1.887e38 / 8
// (exact) is compared.
TEST(MoeFFNReference, an_overflowing_hidden_value_leaves_y_undefined_and_counted) {
  const Params p = params(DType::kBF16, {1}, 1, 1, "relu");
  const double big = 0x1.1Cp127;  // a bf16 value, 1.887e38 (8 significant bits)
  RefOutputs r = reference(p, make_inputs(p, {{big}, {big}, {}, {0.5}, {}, {}, {}, {}, {}}));
  ASSERT_EQ(r.care.count("y"), 1u);
  EXPECT_EQ(r.care.at("y").get(0), 0.0);
  EXPECT_EQ(r.magnitude.at("y").get(0), 0.0);
  EXPECT_EQ(r.expected.at("y").get(0), big * big * 0.5);
  ASSERT_EQ(r.beyond_range.count("y"), 1u);
  EXPECT_EQ(r.beyond_range.at("y").count, 1);
  r = reference(p, make_inputs(p, {{1}, {big / 4}, {}, {0.5}, {}, {}, {}, {}, {}}));
  EXPECT_TRUE(r.beyond_range.empty());
  EXPECT_EQ(r.care.count("y"), 0u);
  EXPECT_EQ(r.expected.at("y").get(0), big / 8);
}

// gelu of a hidden value whose device value may be Inf: x / lower * upper is then -Inf * 0 = NaN,
// so there is no bound (it was {0, 0}: "x^3 overflows, the device returns 0"); a finite huge x
// still gives exactly 0.
TEST(MoeFFNReference, gelu_of_a_possibly_infinite_input_has_no_bound) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(activation_bound(Activation::kGelu, -1e38, inf, DType::kF32).e, inf);
  const Tracked finite = activation_bound(Activation::kGelu, -1e30, 0.0, DType::kF32);
  EXPECT_EQ(finite.v, 0.0);
  EXPECT_EQ(finite.e, 0.0);
}

// The fixpipe keeps the top 19 bits: 0.1f = 0x3DCCCCCD -> 0x3DCCC000 = 0.0999755859375.
// relu, x = 3, W1 = 1, deq1 = 1, scale 1, offset 0: aq = 3; acc2 = 3; y = 3 * 0.0999755859375.
TEST(MoeFFNReference, int8_deq_scale_truncated_to_19_bits) {
  Tensor deq = Tensor::zeros(DType::kU64, {1});
  deq.set_bits(0, 0x3DCCCCCDu);
  EXPECT_EQ(deq_value(deq, 0, true), 0.0999755859375);
  EXPECT_EQ(deq_value(deq, 0, false), static_cast<double>(0.1f));
  const Params p = params(DType::kI8, {1}, 1, 1, "relu");
  const RefOutputs r = reference(p, make_inputs(p, {{3}, {1}, {}, {1}, {}, {1}, {0}, {1.0f}, {0.1f}}));
  EXPECT_EQ(r.expected.at("y").get(0), 3 * 0.0999755859375);
}

// N1 = 0: y rows are the owning expert's bias2 (fp16), or bias2 * deq2 with the full 32 deq bits
// (int8: ProcessZeroN1 dequantises on the vector unit, not in the fixpipe), multiplied in fp32:
// 3 * 0.1f = 0.30000000447 rounds to the float 0.300000011920929 (0x3E99999A).
TEST(MoeFFNReference, zero_hidden_broadcasts_bias2) {
  Params p = params(DType::kF16, {2, 1}, 2, 0, "fastgelu");
  p.has_bias2 = true;
  RefOutputs r = reference(p, make_inputs(p, {{1, 2, 3, 4, 5, 6}, {}, {}, {}, {1, 2, -1, 0.5}, {}, {}, {}, {}}));
  EXPECT_EQ(values_of(r.expected.at("y")), (std::vector<double>{1, 2, 1, 2, -1, 0.5}));
  Params q = params(DType::kI8, {1}, 2, 0, "relu");
  q.has_bias2 = true;
  r = reference(q, make_inputs(q, {{1, 1}, {}, {}, {}, {3, -2}, {1}, {0}, {}, {0.1f, 0.1f}}));
  EXPECT_EQ(values_of(r.expected.at("y")), (std::vector<double>{0.300000011920928955078125, -2 * static_cast<double>(0.1f)}));
}

// expertTokens {0, 2, 1}: rows 0-1 use expert 1, row 2 expert 2 (relu, K1 = N1 = 1, W2 = 1):
// y = relu(x * W1[e]) = [relu(1*2), relu(-1*2), relu(4*-1)] = [2, 0, 0].
TEST(MoeFFNReference, empty_expert_is_skipped) {
  const Params p = params(DType::kF16, {0, 2, 1}, 1, 1, "relu");
  const RefOutputs r = reference(p, make_inputs(p, {{1, -1, 4}, {9, 2, -1}, {}, {1, 1, 1}, {}, {}, {}, {}, {}}));
  EXPECT_EQ(values_of(r.expected.at("y")), (std::vector<double>{2, 0, 0}));
}

TEST(MoeFFNReference, validate_accepts_every_path) {
  for (DType t : {DType::kF16, DType::kBF16, DType::kI8}) {
    for (bool channel : {false, true}) {
      Params p = params(t, {3, 0, 2}, 16, 8, "gelu");
      p.has_bias1 = p.has_bias2 = true;
      p.per_channel_scale = channel && t == DType::kI8;
      EXPECT_TRUE(validate(p, specs(p)).is_ok()) << validate(p, specs(p)).to_string();
    }
  }
  Params q = params(DType::kI8, {2}, 4, 4, "relu");
  q.y_dtype = q.deq_dtype = DType::kBF16;
  EXPECT_TRUE(validate(q, specs(q)).is_ok()) << validate(q, specs(q)).to_string();
}

// The aclnn layer checks null pointers, then expertTokens, then shapes, then dtypes; tiling runs
// only for a non-empty x (GetFFNResultByL0Api returns early), so 300 experts and innerPrecise 7
// pass with M = 0.
TEST(MoeFFNReference, validate_order_and_codes) {
  Params p = params(DType::kF16, {2, 3}, 16, 32, "fastgelu");
  p.expert_tokens = {-1, 6};
  SpecMap s = specs(p);
  s["x"].present = false;
  EXPECT_EQ(validate(p, s).aclnn_code(), 161001);
  EXPECT_EQ(validate(p, specs(p)).aclnn_code(), 161002);
  p.expert_tokens = {2, 3};
  p.inner_precise = 7;
  EXPECT_EQ(validate(p, specs(p)).aclnn_code(), 561002);
  Params empty = params(DType::kF16, std::vector<int64_t>(300, 0), 16, 32, "relu");
  empty.inner_precise = 7;
  EXPECT_TRUE(validate(empty, specs(empty)).is_ok()) << validate(empty, specs(empty)).to_string();
  s = specs(p);
  s["x"].shape = {5, -1};
  EXPECT_EQ(validate(p, s).code(), StatusCode::kInvalidCase);
  // Rules no device call can express (aclCreateTensor takes at most 8 dims; 2^31 tokens need 64 GiB):
  // x with 9 dims (F5, 161002) and M = 2147483640 > INT32_MAX / 16 * 16 = 2147483632 (F11, 561002).
  s = specs(p);
  s["x"].shape = {5, 1, 1, 1, 1, 1, 1, 1, 16};
  s["y"].shape = s["x"].shape;
  EXPECT_EQ(validate(p, s).aclnn_code(), 161002);
  Params huge = params(DType::kF16, {2147483640}, 16, 16, "relu");
  EXPECT_EQ(validate(huge, specs(huge)).aclnn_code(), 561002);
  EXPECT_NE(validate(huge, specs(huge)).message().find("GetBs"), std::string::npos);
  Params fits = params(DType::kF16, {2147483632}, 16, 16, "relu");
  EXPECT_TRUE(validate(fits, specs(fits)).is_ok());
}

// K1 = 4: |sum x W1| <= 4 * 128 * 128 = 65536, so |bias1| may reach 2^31 - 1 - 65536 = 2147418111.
TEST(MoeFFNReference, check_data_rejects_int32_overflow) {
  Params p = params(DType::kI8, {1}, 4, 4, "relu");
  p.has_bias1 = true;
  Values v{std::vector<double>(4, 1), std::vector<double>(16, 1), {2147420000, 0, 0, 0}, std::vector<double>(16, 1),
           {}, {1}, {0}, std::vector<float>(4, 1.0f), std::vector<float>(4, 1.0f)};
  EXPECT_EQ(check_data(p, make_inputs(p, v)).code(), StatusCode::kInvalidCase);
  v.b1[0] = 2147418111;
  EXPECT_TRUE(check_data(p, make_inputs(p, v)).is_ok());
}

// Boundaries k + 1/2 within e of q: 2.5 exact -> 0; 2.5 +- 0.01 -> 1 (2.5); 2.3 +- 0.1 -> 0;
// 2.3 +- 0.25 -> 1 (2.5); 2.3 +- 1 -> 2 (1.5, 2.5, 3.5 is 1.2 away); 130 +- 5 -> 125.5 and 126.5
// (127.5 is beyond the clamp); -200 +- 1 -> 0.
TEST(MoeFFNReference, requant_steps_counts_boundaries) {
  EXPECT_EQ(requant_steps(2.5, 0.0), 0);
  EXPECT_EQ(requant_steps(2.5, 0.01), 1);
  EXPECT_EQ(requant_steps(2.3, 0.1), 0);
  EXPECT_EQ(requant_steps(2.3, 0.25), 1);
  EXPECT_EQ(requant_steps(2.3, 1.0), 2);
  EXPECT_EQ(requant_steps(130, 5), 2);
  EXPECT_EQ(requant_steps(-200, 1), 0);
}

TEST(MoeFFNReference, budget_helpers) {
  // relu passes its input's bound through; exact stays exact.
  EXPECT_EQ(activation_bound(Activation::kRelu, 3.0, 0.0, DType::kF16).e, 0.0);
  EXPECT_EQ(activation_bound(Activation::kFastGelu, 0.0, 0.0, DType::kF16).e, 0.0);
  // fastgelu(-10) in half: exp(17.02) overflows, so the device returns -0; the budget must reach
  // |fastgelu(-10)| = 10 / (1 + e^17.02) = 4.05e-7.
  const Tracked tail = activation_bound(Activation::kFastGelu, -10.0, 0.0, DType::kF16);
  EXPECT_GE(tail.e, std::fabs(tail.v));
  EXPECT_NEAR(tail.v, -10.0 / (1.0 + std::exp(17.02)), 1e-20);
  // A correctly rounded cast of an exact value costs exactly its distance to the fp16 grid: at 0.1
  // the spacing is 2^-14 and 0.1 / 2^-14 = 1638.4, so fp16 holds 1638 * 2^-14 = 0.0999755859375.
  EXPECT_EQ(round_bound({0.1, 0.0}, DType::kF16).e, 0.1 - 0.0999755859375);
  // An inexact input widens it: 0.1 -+ 2^-14 = (1637.4, 1639.4) * 2^-14 round to 1637 and 1639, and
  // the farther one is 0.1 - 1637 * 2^-14 = 1.4 * 2^-14.
  EXPECT_EQ(round_bound({0.1, std::ldexp(1.0, -14)}, DType::kF16).e, 0.1 - 1637 * std::ldexp(1.0, -14));
  EXPECT_EQ(round_bound({0.125, 0.0}, DType::kF16).e, 0.0);
  EXPECT_EQ(accumulation_chain(32), 2 + 16);
  const double grid_values[] = {0.5, 3.0, -1.25};
  EXPECT_EQ(grid_exponent(grid_values, 3), -2);
  EXPECT_EQ(grid_exponent(grid_values, 0), kNoGrid);
  EXPECT_TRUE(fp32_exact_sum(-2, std::ldexp(1.0, 22)));
  EXPECT_FALSE(fp32_exact_sum(-2, std::ldexp(1.0, 22) + 1));
}

// round_exact pins an exact value to the device's rounding with the site's tie rule:
// 1537.5 * 2^-10 is a tie in fp16 ([1, 2) has spacing 2^-10): RNE gives 1538 (even), ties away
// 1538 too; 1538.5 gives 1538 (RNE) and 1539 (away). An inexact input falls back to round_bound.
TEST(MoeFFNReference, round_exact_pins_exact_values_with_the_site_tie_rule) {
  const double u = std::ldexp(1.0, -10);
  EXPECT_EQ(round_exact({1537.5 * u, 0.0}, DType::kF16, Rounding::kNearestEven).v, 1538 * u);
  EXPECT_EQ(round_exact({1538.5 * u, 0.0}, DType::kF16, Rounding::kNearestEven).v, 1538 * u);
  EXPECT_EQ(round_exact({1538.5 * u, 0.0}, DType::kF16, Rounding::kHalfAway).v, 1539 * u);
  EXPECT_EQ(round_exact({1538.5 * u, 0.0}, DType::kF16, Rounding::kHalfAway).e, 0.0);
  const Tracked loose = round_exact({1538.5 * u, u / 8}, DType::kF16, Rounding::kHalfAway);
  EXPECT_EQ(loose.v, 1538.5 * u);
  EXPECT_EQ(loose.e, round_bound({1538.5 * u, u / 8}, DType::kF16).e);
}

// The fp16 high-precision path casts the fp32 hidden value with CAST_ROUND: x = 1.5, W1 = 1,
// b1 = 5 * 2^-11 gives h = 1538.5 * 2^-10 exactly, a = f16 ties away = 1539 * 2^-10, and with
// W2 = 1 the expected y is that value with a zero budget (RNE would give 1538 * 2^-10).
TEST(MoeFFNReference, high_precision_hidden_ties_away) {
  Params p = params(DType::kF16, {1}, 1, 1, "relu");
  p.inner_precise = 0;
  p.has_bias1 = true;
  const TensorMap in = make_inputs(p, {{1.5}, {1}, {5 * std::ldexp(1.0, -11)}, {1}, {}, {}, {}, {}, {}});
  const RefOutputs r = reference(p, in);
  EXPECT_EQ(r.expected.at("y").get(0), 1539 * std::ldexp(1.0, -10));
  EXPECT_EQ(r.magnitude.at("y").get(0), 0.0);
  // The high-performance path rounds h at the fixpipe with RNE instead: 1538 * 2^-10.
  p.inner_precise = 1;
  EXPECT_EQ(reference(p, make_inputs(p, {{1.5}, {1}, {5 * std::ldexp(1.0, -11)}, {1}, {}, {}, {}, {}, {}}))
                .expected.at("y")
                .get(0),
            1538 * std::ldexp(1.0, -10));
}

// AscendQuant multiplies by the half scale: scale = 1 + 2^-11 - 2^-22 is 1 in half, so a = 2.5
// (acc 5 * deq 0.5) gives the tie t = 2.5 and aq = 2 (RNE); y = aq * W2 * deq2 = 2.
TEST(MoeFFNReference, requantisation_uses_the_half_scale) {
  const Params p = params(DType::kI8, {1}, 1, 1, "relu");
  const float deq2 = 1.0f;
  const TensorMap in = make_inputs(p, {{5}, {1}, {}, {1}, {}, {1 + std::ldexp(1.0, -11) - std::ldexp(1.0, -22)},
                                       {0}, {0.5f}, {deq2}});
  const RefOutputs r = reference(p, in);
  EXPECT_EQ(r.expected.at("y").get(0), 2.0);
  EXPECT_EQ(r.magnitude.at("y").get(0), 0.0);
}

// Issue 13: offset has E elements with experts. A one-element offset is the no-experts (1) shape,
// valid with one expert and rejected with more (CheckQuantScaleAndOffset, 161002): no broadcast.
TEST(MoeFFNReference, one_element_offset_only_with_one_expert) {
  Params one = params(DType::kI8, {4}, 16, 8, "relu");
  one.offset_length = 1;
  EXPECT_EQ(specs(one).at("offset").shape, (Shape{1}));
  EXPECT_TRUE(validate(one, specs(one)).is_ok()) << validate(one, specs(one)).to_string();
  Params two = params(DType::kI8, {2, 3}, 16, 8, "relu");
  two.offset_length = 1;
  const Status st = validate(two, specs(two));
  EXPECT_EQ(st.aclnn_code(), 161002);
  EXPECT_NE(st.to_string().find("offset length should be E"), std::string::npos) << st.to_string();
}

// The exact fill with relu keeps every step exact on the device, so the budget is 0 everywhere.
TEST(MoeFFNReference, exact_relu_fill_has_zero_budget) {
  for (DType t : {DType::kF16, DType::kBF16, DType::kI8}) {
    const auto [p, k] = mc::Builder().dtype(t).tokens({5, 0, 7}).k1(64).n1(48).activation("relu").bias1().bias2().build();
    const TensorMap in = mc::fill(p, k, specs(p), FillMode::kExact, 3).value();
    const RefOutputs r = reference(p, in);
    const Tensor& mag = r.magnitude.at("y");
    for (int64_t i = 0; i < mag.numel(); ++i) ASSERT_EQ(mag.get(i), 0.0) << dtype_name(t) << " element " << i;
  }
}



// At model sizes the high-performance path looks the activation of determined fp16 hidden values
// up in a table (M * N1 >= 2^18). Rows are independent, so the first rows of a large call (table)
// must equal a call on those rows alone (direct evaluation), values and budgets bit for bit. The
// large call repeats the small one's rows, so that everything computed over all of x (its grid)
// is the same. Exact fills pin every hidden value (all lookups), realistic ones pin a part.
TEST(MoeFFNReference, activation_table_equals_direct_evaluation) {
  constexpr int64_t kSmall = 24, kLarge = 200, k1 = 32, n1 = 1320;
  ASSERT_GE(kLarge * n1, int64_t{1} << 18);
  ASSERT_LT(kSmall * n1, int64_t{1} << 18);
  for (const char* act : {"fastgelu", "silu", "gelu"}) {
    for (FillMode mode : {FillMode::kExact, FillMode::kRealistic}) {
      const auto [big, knobs] = mc::Builder().tokens({kLarge}).k1(k1).n1(n1).activation(act).bias1().bias2().build();
      TensorMap in = mc::fill(big, knobs, specs(big), mode, 11).value();
      Tensor x = Tensor::zeros(DType::kF16, {kLarge, k1});
      const auto* src = in.at("x").ptr<uint16_t>();
      for (int64_t r = 0; r < kLarge; ++r) std::memcpy(x.ptr<uint16_t>() + r * k1, src + (r % kSmall) * k1, 2 * k1);
      in["x"] = x;
      const Params small = mc::Builder().tokens({kSmall}).k1(k1).n1(n1).activation(act).bias1().bias2().build().first;
      TensorMap in_small = in;
      Tensor xs = Tensor::zeros(DType::kF16, {kSmall, k1});
      std::memcpy(xs.ptr<uint16_t>(), x.ptr<uint16_t>(), static_cast<size_t>(2 * kSmall * k1));
      in_small["x"] = xs;
      const RefOutputs r_big = reference(big, in), r_small = reference(small, in_small);
      for (const auto& [a_map, b_map] : {std::pair{&r_big.expected, &r_small.expected},
                                         std::pair{&r_big.magnitude, &r_small.magnitude}}) {
        const Tensor& a = a_map->at("y");
        const Tensor& b = b_map->at("y");
        ASSERT_EQ(std::memcmp(a.ptr<double>(), b.ptr<double>(), static_cast<size_t>(b.nbytes())), 0)
            << act << " " << fill_mode_name(mode);
      }
    }
  }
}

// The fp paths of the reference written plainly, from the formulas in moe_ffn_forward.cpp's
// comments and spec §2.7: every sum a loop in increasing index from 0.0, grids and maxima over the
// converted values, no tables, no blocking, no threads. Only the bound primitives of
// moe_ffn_bound.h are shared with the reference.
struct PlainOut {
  std::vector<double> y, mag;
};

int plain_product_grid(int a, int b) { return a == kNoGrid || b == kNoGrid ? kNoGrid : a + b; }

double plain_max_abs(const double* v, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(v[i]));
  return m;
}

PlainOut plain_float_reference(const Params& p, const TensorMap& in) {
  const int64_t m_rows = p.m, k = p.k1, n = p.n1, e_n = num_experts(p);
  const Path path = path_of(p);
  const Activation act = parse_activation(p.activation);
  const std::vector<double> x = values_of(in.at("x")), w1 = values_of(in.at("weight1")),
                            w2 = values_of(in.at("weight2"));
  const std::vector<double> b1 = p.has_bias1 ? values_of(in.at("bias1")) : std::vector<double>(e_n * n, 0.0);
  const std::vector<double> b2 = p.has_bias2 ? values_of(in.at("bias2")) : std::vector<double>(e_n * k, 0.0);
  const std::vector<int64_t> off = expert_offsets(p.expert_tokens);
  const int grid_x = grid_exponent(x.data(), m_rows * k);
  PlainOut out{std::vector<double>(m_rows * k), std::vector<double>(m_rows * k)};
  for (int64_t e = 0; e < e_n; ++e) {
    const double* w1e = w1.data() + e * k * n;
    const double* w2e = w2.data() + e * n * k;
    const double* b1e = b1.data() + e * n;
    const double* b2e = b2.data() + e * k;
    std::vector<double> w1_norm(n, 0.0);
    for (int64_t i = 0; i < k; ++i) {
      for (int64_t j = 0; j < n; ++j) w1_norm[j] += w1e[i * n + j] * w1e[i * n + j];
    }
    for (double& v : w1_norm) v = std::sqrt(v);
    const int grid1 = std::min(plain_product_grid(grid_x, grid_exponent(w1e, k * n)), grid_exponent(b1e, n));
    const int grid_w2 = grid_exponent(w2e, n * k), grid_b2 = grid_exponent(b2e, k);
    const double w2_max = plain_max_abs(w2e, n * k), b2_max = plain_max_abs(b2e, k);
    for (int64_t r = off[e]; r < off[e + 1]; ++r) {
      const double* xr = x.data() + r * k;
      double xx = 0;
      for (int64_t i = 0; i < k; ++i) xx += xr[i] * xr[i];
      const double xn = std::sqrt(xx);
      std::vector<double> a(n), weight(n);
      bool exact = true;
      for (int64_t j = 0; j < n; ++j) {
        double h = 0;
        for (int64_t i = 0; i < k; ++i) h += xr[i] * w1e[i * n + j];
        h = h + b1e[j];
        const double cs = xn * w1_norm[j] + std::fabs(b1e[j]);
        const double e_acc = fp32_exact_sum(grid1, cs) ? 0.0 : accumulation_bound(k, cs);
        Tracked t;
        if (path == Path::kF16HighPerformance) {
          const Tracked h16 = round_exact({h, e_acc}, DType::kF16, Rounding::kNearestEven);
          t = activation_bound(act, h16.v, h16.e, DType::kF16);
        } else {
          t = round_exact(activation_bound(act, h, e_acc, DType::kF32), path == Path::kBF16 ? DType::kBF16 : DType::kF16,
                          Rounding::kHalfAway);
        }
        a[j] = t.v;
        weight[j] = t.e;
        exact = exact && t.e == 0;
      }
      double abs_sum = 0;
      for (int64_t j = 0; j < n; ++j) abs_sum += std::fabs(a[j]);
      const int grid = std::min(plain_product_grid(grid_exponent(a.data(), n), grid_w2), grid_b2);
      exact = exact && fp32_exact_sum(grid, abs_sum * w2_max + b2_max);
      const double kap = exact ? 0.0 : accumulation_bound(n, 1.0);
      for (int64_t j = 0; j < n; ++j) weight[j] = weight[j] + kap * (std::fabs(a[j]) + weight[j]);
      for (int64_t c = 0; c < k; ++c) {
        double yv = 0, mv = 0;
        for (int64_t j = 0; j < n; ++j) {
          yv += a[j] * w2e[j * k + c];
          mv += weight[j] * std::fabs(w2e[j * k + c]);
        }
        out.y[r * k + c] = yv + b2e[c];
        out.mag[r * k + c] = mv + kap * std::fabs(b2e[c]);
      }
    }
  }
  return out;
}

bool same_bits(const Tensor& t, const std::vector<double>& v) {
  return static_cast<size_t>(t.numel()) == v.size() && std::memcmp(t.ptr<double>(), v.data(), t.nbytes()) == 0;
}

// The optimised fp paths (blocked products on fp16/bf16 patterns, grids and maxima from the
// patterns, per-thread scratch, rows' grids only when they matter, the activation table) against
// the plain formulation, values and budgets bit for bit, at 1, 2 and 7 threads. The cases cover
// the table (M * N1 >= 2^18), exact fills (exact rows, zero budgets), fp16 subnormals in W1 (a
// grid at the format's floor), exact relu rows (grids and max |W2| decide kappa), and an infinity
// and a NaN in W2 (max |W2| skips NaN).
TEST(MoeFFNReference, float_paths_equal_the_plain_formulation_at_any_thread_count) {
  struct Case {
    DType dtype;
    int64_t inner_precise;
    std::vector<int64_t> tokens;
    int64_t k1, n1;
    const char* act;
    bool bias1, bias2;
    FillMode mode;
    bool specials;
  };
  const Case cases[] = {
      {DType::kF16, 1, {150, 0, 37}, 300, 1420, "fastgelu", true, true, FillMode::kRealistic, false},
      {DType::kF16, 1, {30, 11}, 40, 70, "gelu", true, false, FillMode::kRealistic, true},
      {DType::kF16, 1, {9, 14}, 64, 48, "silu", true, true, FillMode::kExact, false},
      {DType::kF16, 0, {20, 9}, 40, 33, "silu", true, false, FillMode::kAdversarial, false},
      {DType::kF16, 0, {8, 0, 13}, 32, 40, "fastgelu", false, true, FillMode::kExact, true},
      {DType::kBF16, 0, {12, 5, 0}, 64, 48, "gelu", false, true, FillMode::kRealistic, true},
      {DType::kBF16, 0, {7, 19}, 48, 24, "fastgelu", true, true, FillMode::kExact, false},
      {DType::kF16, 1, {6, 0, 11}, 64, 48, "relu", true, true, FillMode::kExact, true},
      {DType::kF16, 0, {10, 4}, 32, 40, "relu", false, true, FillMode::kExact, false},
      {DType::kBF16, 0, {5, 9}, 48, 24, "relu", true, false, FillMode::kExact, true},
  };
  for (const Case& c : cases) {
    auto [p, knobs] = mc::Builder()
                          .dtype(c.dtype)
                          .tokens(c.tokens)
                          .k1(c.k1)
                          .n1(c.n1)
                          .activation(c.act)
                          .inner_precise(c.inner_precise)
                          .bias1(c.bias1)
                          .bias2(c.bias2)
                          .build();
    TensorMap in = mc::fill(p, knobs, specs(p), c.mode, 21).value();
    const bool bf16 = c.dtype == DType::kBF16;
    if (c.specials) {
      // The first expert's W2 gets +inf, the last one's a NaN (its max |W2| stays finite, so its
      // exact rows stay exact); W1's first row subnormals (fp16: odd multiples of 2^-24).
      Tensor& w2 = in["weight2"];
      const int64_t last = (num_experts(p) - 1) * c.n1 * c.k1;
      w2.set_bits(3, bf16 ? 0x7F80 : 0x7C00);
      w2.set_bits(last + 5, bf16 ? 0x7FC1 : 0x7E01);
      if (c.mode != FillMode::kExact) {  // (subnormals would make an exact fill's sums inexact)
        Tensor& w1 = in["weight1"];
        for (int64_t j = 0; j < c.n1; j += 7) w1.set_bits(j, bf16 ? 0x0003 : 0x0005);
      }
    }
    const PlainOut want = plain_float_reference(p, in);
    if (c.mode == FillMode::kExact && std::string(c.act) == "relu") {
      // The exact rows this case is for: the last expert's budgets are exactly zero (but in the
      // NaN's column), the NaN left out of its max |W2|.
      for (int64_t r = p.m - c.tokens.back(); r < p.m; ++r) {
        for (int64_t col = 0; col < c.k1; ++col) {
          if (c.specials && col == 5) continue;
          ASSERT_EQ(want.mag[static_cast<size_t>(r * c.k1 + col)], 0.0) << dtype_name(c.dtype) << " row " << r;
        }
      }
    }
    for (int64_t threads : {1, 2, 7}) {
      math::set_threads(threads);
      const RefOutputs got = reference(p, in);
      EXPECT_TRUE(same_bits(got.expected.at("y"), want.y))
          << dtype_name(c.dtype) << " " << c.act << " " << fill_mode_name(c.mode) << " y at " << threads << " threads";
      EXPECT_TRUE(same_bits(got.magnitude.at("y"), want.mag))
          << dtype_name(c.dtype) << " " << c.act << " " << fill_mode_name(c.mode) << " magnitude at " << threads
          << " threads";
    }
  }
  math::set_threads(0);  // the default again
}

uint64_t bits_of(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// activation_bounds and round_exact_f16 on every lane path of the architecture against
// activation_bound(act, h, e, kF16) and round_exact({h, e}, kF16, RNE), value by value, bit for
// bit: hidden
// values over many binades and both signs, fp16 values and their rounding midpoints (the pinned
// and the undetermined roundings), zeros of both signs, double subnormals, values near the exp
// overflow guard and near fp16 overflow, with bounds of 0, a fraction of an fp16 ulp, several ulps
// and huge, infinite or NaN bounds, in calls of every length from 1 to 67 (chunk tails and odd
// pairs). Values left to the scalar code are allowed, but must be few for ordinary values (else
// the test would prove nothing about the lanes).
TEST(MoeFFNReference, lane_activation_bounds_and_roundings_equal_the_scalar_ones) {
  std::mt19937_64 rng(77);
  std::vector<double> hs, es;
  const double inf = std::numeric_limits<double>::infinity();
  for (int i = 0; i < 400000; ++i) {
    double h;
    switch (i % 8) {
      case 0: h = std::normal_distribution<double>(0, 2)(rng); break;
      case 1: h = std::ldexp(std::uniform_real_distribution<double>(1, 2)(rng), static_cast<int>(rng() % 60) - 40); break;
      case 2: {  // a finite fp16 value, or the midpoint to the next one (a tie)
        const auto b = static_cast<uint16_t>(rng() % 0x7BFF);
        const double v = f16_to_double(b), next = f16_to_double(static_cast<uint16_t>(b + 1));
        h = rng() % 2 == 0 ? v : v + (next - v) / 2;
        break;
      }
      case 3: h = std::uniform_real_distribution<double>(-8, 8)(rng); break;
      case 4: h = std::uniform_real_distribution<double>(-7, -5)(rng); break;  // exp argument near 11
      case 5: h = std::uniform_real_distribution<double>(30000, 70000)(rng); break;
      case 6: { const double z[] = {0.0, -0.0, 0x1p-1074, -0x1p-1060, 0x1p-30, -0x1p-25}; h = z[rng() % 6]; break; }
      default: h = std::uniform_real_distribution<double>(-1, 1)(rng); break;
    }
    if (rng() % 2 == 0 && i % 8 != 6) h = -h;
    double e;
    const double u = std::ldexp(1.0, std::max(-24, std::ilogb(h == 0 ? 0x1p-24 : h) - 10));  // about an fp16 ulp of h
    switch (rng() % 7) {
      case 0: e = 0; break;
      case 1: e = u * std::uniform_real_distribution<double>(0, 0.5)(rng); break;
      case 2: e = u * std::uniform_real_distribution<double>(0.5, 4)(rng); break;
      case 3: e = u * 1e-6; break;
      case 4: e = rng() % 8 == 0 ? inf : (rng() % 8 == 0 ? std::nan("") : 1e6); break;
      default: e = round_exact({h, u * 0.7}, DType::kF16, Rounding::kNearestEven).e; break;  // forward's bounds
    }
    hs.push_back(h);
    es.push_back(e);
  }
  int64_t ordinary = 0;
  for (size_t i = 0; i < hs.size(); ++i) ordinary += std::isfinite(es[i]) && std::fabs(hs[i]) < 4 && es[i] < 1;
  const auto same = [](Tracked a, Tracked b) { return bits_of(a.v) == bits_of(b.v) && bits_of(a.e) == bits_of(b.e); };
  // Calls over [first, first + len) with len cycling through 1..67.
  const auto each_call = [&](const auto& call) {
    for (size_t first = 0, len = 1; first < hs.size(); first += len, len = len % 67 + 1) {
      call(first, std::min(len, hs.size() - first));
    }
  };
  // Every vector path this CPU runs has its row (the narrowest, sse2 or neon, also serves "scalar").
  std::vector<Isa> vector_paths = supported_isas();
  vector_paths.erase(vector_paths.begin());
  EXPECT_EQ(lane_isas(), vector_paths);
  const Isa isa_before = math::isa();
  for (Isa path : lane_isas()) {
    math::set_isa(path);
    const std::string name = isa_name(path);
    int64_t scalar = 0, bad = 0;
    each_call([&](size_t first, size_t len) {
      std::vector<double> v(len), e(len);
      scalar += round_exact_f16(hs.data() + first, es.data() + first, static_cast<int64_t>(len), v.data(), e.data());
      for (size_t l = 0; l < len; ++l) {
        const Tracked want = round_exact({hs[first + l], es[first + l]}, DType::kF16, Rounding::kNearestEven);
        if (!same(want, {v[l], e[l]}) && ++bad <= 5) {
          ADD_FAILURE() << name << " round h " << std::hexfloat << hs[first + l] << " e " << es[first + l] << ": "
                        << want.v << " " << want.e << " vs " << v[l] << " " << e[l];
        }
      }
    });
    EXPECT_EQ(bad, 0) << name << " round_exact_f16";
    EXPECT_LT(scalar, static_cast<int64_t>(hs.size()) - ordinary * 9 / 10)
        << name << " round_exact_f16: too many scalar values";
    for (Activation act : {Activation::kFastGelu, Activation::kSilu}) {
      EXPECT_TRUE(lanes_handle(act));
      scalar = bad = 0;
      each_call([&](size_t first, size_t len) {
        std::vector<Tracked> out(len);
        scalar += activation_bounds(act, hs.data() + first, es.data() + first, static_cast<int64_t>(len), out.data());
        for (size_t l = 0; l < len; ++l) {
          const double h = hs[first + l], e = es[first + l];
          const Tracked want = activation_bound(act, h, e, DType::kF16);
          if (!same(want, out[l]) && ++bad <= 5) {
            ADD_FAILURE() << name << " " << activation_name(act) << " h " << std::hexfloat << h << " e " << e << ": "
                          << want.v << " " << want.e << " vs " << out[l].v << " " << out[l].e;
          }
        }
      });
      EXPECT_EQ(bad, 0) << name << " " << activation_name(act);
      EXPECT_LT(scalar, static_cast<int64_t>(hs.size()) - ordinary * 9 / 10)
          << name << " " << activation_name(act) << ": too many values left to the scalar code";
    }
  }
  math::set_isa(isa_before);
  EXPECT_FALSE(lanes_handle(Activation::kGelu));
  EXPECT_FALSE(lanes_handle(Activation::kRelu));
}

}  // namespace
}  // namespace opgate::ref::moe_ffn
