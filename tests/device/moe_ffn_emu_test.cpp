// Tests of the MoeFFN kernel emulation (spec attention-and-ffn.md §2.7): hand-computed half-precision
// values, ties in the re-quantisation, the 19-bit deqScale, an exposing input per catalogued defect
// and determinism. That the emulator stays within the budget is a property in moe_ffn_props_test.cpp.
#include "device/emu/moe_ffn.h"

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cases/moe_ffn.h"
#include "core/guard.h"
#include "core/parallel.h"
#include "reference/math/shared_simd.h"
#include "tests/reference/moe_ffn_testing.h"

namespace opgate::emu::moe_ffn {
namespace {

namespace mc = cases::moe_ffn;
using ref::moe_ffn::Params;

using moe_ffn_testing::make_inputs;
using moe_ffn_testing::Values;

// y on a poisoned, guarded buffer, like the runner allocates it.
Tensor run_emu(const Params& p, const TensorMap& in, const std::string& defect = "") {
  const TensorSpec y = ref::moe_ffn::specs(p).at("y");
  TensorMap out{{"y", make_guarded(y.dtype, y.shape).tensor}};
  const Status st = run(p, in, out, defect);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return out.at("y");
}

std::vector<double> values_of(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get(i);
  return v;
}

Params params(DType dtype, std::vector<int64_t> tokens, int64_t k1, int64_t n1, const char* act) {
  return mc::Builder().dtype(dtype).tokens(std::move(tokens)).k1(k1).n1(n1).activation(act).build().first;
}

// FasterGelu on fp16 for x = 1 (each op rounds to half; -1.702 is the half -1.7021484375):
//   t = -1.7021484375; E = f16(e^t = 0.182283...) = 0.1822509765625; d = f16(1 + E) = 1.1826171875;
//   a = f16(1 / d = 0.845583...) = 0.845703125 (1732 * 2^-11). W2 = 1, so y = a.
TEST(MoeFFNEmu, half_fastgelu_by_hand) {
  const Params p = params(DType::kF16, {1}, 1, 1, "fastgelu");
  EXPECT_EQ(run_emu(p, make_inputs(p, {{1}, {1}, {}, {1}, {}, {}, {}, {}, {}})).get(0), 0.845703125);
  // x = 2: 1.935546875 in half; the erf GELU would give f16(2 Phi(2)) = 1.9541015625.
  const TensorMap in2 = make_inputs(p, {{2}, {1}, {}, {1}, {}, {}, {}, {}, {}});
  EXPECT_EQ(run_emu(p, in2).get(0), 1.935546875);
  EXPECT_EQ(run_emu(p, in2, "mffn.erf_gelu").get(0), 1.9541015625);
}

// The int8 example of the reference tests: q = 3.5 -> 4 and q = 2.5 -> 2 (rne); half away turns
// the tie into 3: acc2 = 3 [1, -2] + [1, 0] = [4, -6], y = 0.25 acc2 = [1, -1.5].
TEST(MoeFFNEmu, requantisation_ties_to_even) {
  Params p = params(DType::kI8, {1}, 2, 1, "relu");
  p.has_bias1 = p.has_bias2 = true;
  Values v{{2, -1}, {3, 4}, {1}, {1, -2}, {1, 0}, {2}, {0.5}, {0.5f}, {0.25f, 0.25f}};
  EXPECT_EQ(values_of(run_emu(p, make_inputs(p, v))), (std::vector<double>{1.25, -2}));
  v.offset = {-0.5};
  EXPECT_EQ(values_of(run_emu(p, make_inputs(p, v))), (std::vector<double>{0.75, -1}));
  EXPECT_EQ(values_of(run_emu(p, make_inputs(p, v), "mffn.requant_round_half_away")), (std::vector<double>{1, -1.5}));
}

// y = f16(3 * deq2): with the fixpipe's 0.0999755859375 the product 0.2999267578125 is a tie at
// 1228.5 * 2^-12 and rounds to even, 0.2998046875; the full 0.1f gives 0.300048828125.
TEST(MoeFFNEmu, fixpipe_truncates_deq_scale) {
  const Params p = params(DType::kI8, {1}, 1, 1, "relu");
  const TensorMap in = make_inputs(p, {{3}, {1}, {}, {1}, {}, {1}, {0}, {1.0f}, {0.1f}});
  EXPECT_EQ(run_emu(p, in).get(0), 0.2998046875);
  EXPECT_EQ(run_emu(p, in, "mffn.deq_scale_not_truncated").get(0), 0.300048828125);
}

// Rounding sites by hand (u = 2^-10, the fp16 spacing on [1, 2)); W2 = 1, so y is the hidden value.
// High performance: h = 1.5 * (1 + u) = 1537.5 u in fp32; the fixpipe rounds to even, 1538 u, a
// truncating fixpipe gives 1537 u. High precision: h = 1.5 + 5 * 2^-11 = 1538.5 u; CAST_ROUND ties
// away to 1539 u, RNE would give 1538 u.
TEST(MoeFFNEmu, hidden_rounding_sites_by_hand) {
  const double u = std::ldexp(1.0, -10);
  const Params hp = params(DType::kF16, {1}, 1, 1, "relu");
  const TensorMap hp_in = make_inputs(hp, {{1.5}, {1 + u}, {}, {1}, {}, {}, {}, {}, {}});
  EXPECT_EQ(run_emu(hp, hp_in).get(0), 1538 * u);
  EXPECT_EQ(run_emu(hp, hp_in, "mffn.fixpipe_truncates").get(0), 1537 * u);
  Params hi = hp;
  hi.inner_precise = 0;
  hi.has_bias1 = true;
  const TensorMap hi_in = make_inputs(hi, {{1.5}, {1}, {5 * u / 2}, {1}, {}, {}, {}, {}, {}});
  EXPECT_EQ(run_emu(hi, hi_in).get(0), 1539 * u);
  EXPECT_EQ(run_emu(hi, hi_in, "mffn.hidden_cast_round_even").get(0), 1538 * u);
}

// AscendQuant multiplies by the half scale: scale = 1 + 2^-11 - 2^-22 is 1 in half, a = 5 * 0.5 =
// 2.5, t = 2.5 ties to 2. With the fp32 scale, f16(2.5 * scale) = 2.5 + 2^-9 and aq = 3.
TEST(MoeFFNEmu, requantisation_scale_is_cast_to_half) {
  const Params p = params(DType::kI8, {1}, 1, 1, "relu");
  const TensorMap in = make_inputs(p, {{5}, {1}, {}, {1}, {}, {1 + std::ldexp(1.0, -11) - std::ldexp(1.0, -22)}, {0},
                                       {0.5f}, {1.0f}});
  EXPECT_EQ(run_emu(p, in).get(0), 2.0);
  EXPECT_EQ(run_emu(p, in, "mffn.quant_scale_not_half").get(0), 3.0);
}

// expertTokens {1, 2} read as cumulative: expert 1 covers rows [1, 2), so row 2 is never written.
TEST(MoeFFNEmu, cumulative_reading_leaves_rows_unwritten) {
  const Params p = params(DType::kF16, {1, 2}, 2, 2, "relu");
  const TensorMap in = make_inputs(p, {std::vector<double>(6, 1), std::vector<double>(8, 1), {},
                                       std::vector<double>(8, 1), {}, {}, {}, {}, {}});
  const Tensor y = run_emu(p, in, "mffn.expert_tokens_cumulative");
  EXPECT_EQ(y.bits(4), poison_bits(DType::kF16));
  EXPECT_EQ(y.bits(5), poison_bits(DType::kF16));
  const Tensor good = run_emu(p, in);
  for (int64_t i = 0; i < good.numel(); ++i) EXPECT_EQ(good.get(i), 4.0) << i;  // relu(2) * 1 * 2 terms
}

// Every defect changes y on an input chosen to expose it.
TEST(MoeFFNEmu, every_defect_changes_an_exposing_case) {
  Params gelu = params(DType::kF16, {2, 1}, 2, 3, "fastgelu");
  gelu.has_bias2 = true;
  const TensorMap gelu_in = make_inputs(gelu, {{1, 2, -1, 0.5, 2, 1}, {1, 2, -1, 0.5, 1, 0, 2, -1, 1, 0, 1, 1},
                                               {}, {1, -1, 2, 0, 1, 1, 1, 2, -1, 0.5, 1, 1}, {0.5, -1, 1, 2}, {}, {}, {}, {}});
  Params skip = params(DType::kF16, {0, 2}, 2, 2, "relu");
  const TensorMap skip_in = make_inputs(skip, {{1, 2, 3, 4}, {1, 0, 0, 1, 2, 0, 0, 2}, {}, {1, 0, 0, 1, 1, 0, 0, 1},
                                               {}, {}, {}, {}, {}});
  Params channel = params(DType::kI8, {2}, 2, 2, "relu");
  channel.per_channel_scale = true;
  const TensorMap channel_in = make_inputs(channel, {{1, 2, 3, 4}, {1, 0, 0, 1}, {}, {1, 0, 0, 1}, {}, {1, 2}, {0},
                                                     {1.0f, 1.0f}, {1.0f, 1.0f}});
  Params deq = params(DType::kI8, {1}, 1, 1, "relu");
  const TensorMap deq_in = make_inputs(deq, {{3}, {1}, {}, {1}, {}, {1}, {0}, {1.0f}, {0.1f}});
  Params tie = params(DType::kI8, {1}, 2, 1, "relu");
  tie.has_bias1 = tie.has_bias2 = true;
  const TensorMap tie_in = make_inputs(tie, {{2, -1}, {3, 4}, {1}, {1, -2}, {1, 0}, {2}, {-0.5}, {0.5f}, {0.25f, 0.25f}});
  const double u = std::ldexp(1.0, -10);
  const Params hp = params(DType::kF16, {1}, 1, 1, "relu");
  const TensorMap hp_in = make_inputs(hp, {{1.5}, {1 + u}, {}, {1}, {}, {}, {}, {}, {}});
  Params hi = hp;
  hi.inner_precise = 0;
  hi.has_bias1 = true;
  const TensorMap hi_in = make_inputs(hi, {{1.5}, {1}, {5 * u / 2}, {1}, {}, {}, {}, {}, {}});
  const Params quant = params(DType::kI8, {1}, 1, 1, "relu");
  const TensorMap quant_in = make_inputs(
      quant, {{5}, {1}, {}, {1}, {}, {1 + std::ldexp(1.0, -11) - std::ldexp(1.0, -22)}, {0}, {0.5f}, {1.0f}});
  const std::map<std::string, std::pair<const Params*, const TensorMap*>> exposing = {
      {"mffn.expert_tokens_cumulative", {&gelu, &gelu_in}}, {"mffn.erf_gelu", {&gelu, &gelu_in}},
      {"mffn.bias2_dropped", {&gelu, &gelu_in}},            {"mffn.w1_transposed", {&gelu, &gelu_in}},
      {"mffn.deq_scale_not_truncated", {&deq, &deq_in}},    {"mffn.requant_round_half_away", {&tie, &tie_in}},
      {"mffn.empty_expert_shifts_weights", {&skip, &skip_in}}, {"mffn.per_channel_scale_ignored", {&channel, &channel_in}},
      {"mffn.fixpipe_truncates", {&hp, &hp_in}},            {"mffn.hidden_cast_round_even", {&hi, &hi_in}},
      {"mffn.quant_scale_not_half", {&quant, &quant_in}},
  };
  for (const DefectInfo& d : defects()) {
    ASSERT_EQ(exposing.count(d.name), 1u) << d.name << " has no exposing case here";
    const auto& [p, in] = exposing.at(d.name);
    EXPECT_FALSE(run_emu(*p, *in, d.name).bytes_equal(run_emu(*p, *in))) << d.name;
  }
}

TEST(MoeFFNEmu, unknown_defect_is_an_internal_error) {
  const Params p = params(DType::kF16, {1}, 1, 1, "relu");
  TensorMap out{{"y", Tensor::zeros(DType::kF16, {1, 1})}};
  EXPECT_EQ(run(p, make_inputs(p, {{1}, {1}, {}, {1}, {}, {}, {}, {}, {}}), out, "mffn.nope").code(),
            StatusCode::kInternal);
}

// Row blocks run on several threads; the result must not depend on their scheduling.
TEST(MoeFFNEmu, deterministic_over_runs) {
  const auto [p, k] = mc::Builder().tokens({70, 0, 130, 5}).k1(40).n1(72).bias1().bias2().build();
  const TensorMap in = mc::fill(p, k, ref::moe_ffn::specs(p), FillMode::kRealistic, 11).value();
  const Tensor first = run_emu(p, in);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(run_emu(p, in).bytes_equal(first));
  for (int64_t i = 0; i < first.numel(); ++i) ASSERT_NE(first.bits(i), poison_bits(DType::kF16)) << i;
}



// The fp32 fractal matmul is vectorised per ISA path (the scalar setting runs the SSE2 code); every
// path and thread count must give the 1-thread SSE2 y bit for bit: fp16 and bf16 (both matmuls fp32), K1 = 300 (a
// second 256-deep block ending inside a fractal), experts of 70, 0, 13 rows (partial register
// tiles), N1 = 45 and K1 columns of 300 (partial 16- and 32-column panels), biases.
TEST(MoeFFNEmu, bit_identical_across_isa_paths_and_threads) {
  const math::Isa isa_before = math::isa();
  for (DType t : {DType::kF16, DType::kBF16}) {
    const auto [p, k] = mc::Builder().dtype(t).tokens({70, 0, 13}).k1(300).n1(45).bias1().bias2().build();
    const TensorMap in = mc::fill(p, k, ref::moe_ffn::specs(p), FillMode::kRealistic, 5).value();
    math::set_threads(1);
    math::set_isa(math::Isa::kSse2);
    const Tensor base = run_emu(p, in);
    for (math::Isa isa : {math::Isa::kSse2, math::Isa::kAvx2, math::Isa::kAvx512}) {
      if (!math::isa_supported(isa)) continue;
      math::set_isa(isa);
      for (int64_t threads : {1, 2, 7}) {
        math::set_threads(threads);
        EXPECT_TRUE(run_emu(p, in).bytes_equal(base)) << dtype_name(t) << " " << math::isa_name(isa) << " at "
                                                      << threads << " threads";
      }
    }
  }
  math::set_threads(0);
  math::set_isa(isa_before);
}

}  // namespace
}  // namespace opgate::emu::moe_ffn
