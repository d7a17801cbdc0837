// Tests of the MoeFFN kernel emulation (spec attention-and-ffn.md §2.7): hand-computed half-precision
// values, ties in the re-quantisation, the 19-bit deqScale, an exposing input per catalogued defect
// and determinism. That the emulator stays within the budget is a property in moe_ffn_props_test.cpp.
#include "device/emu/moe_ffn.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cases/moe_ffn.h"
#include "core/guard.h"
#include "core/isa.h"
#include "core/parallel.h"
#include "reference/math/shared_simd.h"
#include "tests/reference/moe_ffn_testing.h"

namespace opgate::emu::moe_ffn {
namespace {

namespace mc = cases::moe_ffn;
using ref::moe_ffn::Params;

using moe_ffn_testing::make_inputs;
using moe_ffn_testing::acc1_midpoint_values;
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

// The fixpipe dequantises float(acc1) (spec §2.7). acc1 = 1 + bias1 = 2^24 + 2^13 + 1 is an fp32
// tie that RNE sends to 2^24 + 2^13, so h = (2^24 + 2^13) * 2^-20 = 16 + 2^-7, the fp16 midpoint
// between 16 and 16 + 2^-6, which RNE sends to 16. AscendQuant: f16(16 * 6.28125) = 100.5 ties to
// aq = 100, and y = 100 * 1 = 100. Without the conversion h = 16 + 2^-7 + 2^-20 rounds up to
// 16 + 2^-6, 16.015625 * 6.28125 = 100.598 -> f16 100.625 -> aq = 101, y = 101.
TEST(MoeFFNEmu, fixpipe_dequantises_the_fp32_accumulator) {
  Params p = params(DType::kI8, {1}, 1, 1, "relu");
  p.has_bias1 = true;
  const TensorMap in = make_inputs(p, acc1_midpoint_values());
  EXPECT_EQ(run_emu(p, in).get(0), 100.0);
  EXPECT_EQ(run_emu(p, in, "mffn.acc_not_converted").get(0), 101.0);
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
  Params conv = params(DType::kI8, {1}, 1, 1, "relu");
  conv.has_bias1 = true;
  const TensorMap conv_in = make_inputs(conv, acc1_midpoint_values());
  const std::map<std::string, std::pair<const Params*, const TensorMap*>> exposing = {
      {"mffn.expert_tokens_cumulative", {&gelu, &gelu_in}}, {"mffn.erf_gelu", {&gelu, &gelu_in}},
      {"mffn.bias2_dropped", {&gelu, &gelu_in}},            {"mffn.w1_transposed", {&gelu, &gelu_in}},
      {"mffn.deq_scale_not_truncated", {&deq, &deq_in}},    {"mffn.requant_round_half_away", {&tie, &tie_in}},
      {"mffn.empty_expert_shifts_weights", {&skip, &skip_in}}, {"mffn.per_channel_scale_ignored", {&channel, &channel_in}},
      {"mffn.fixpipe_truncates", {&hp, &hp_in}},            {"mffn.hidden_cast_round_even", {&hi, &hi_in}},
      {"mffn.quant_scale_not_half", {&quant, &quant_in}},   {"mffn.acc_not_converted", {&conv, &conv_in}},
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

// The int8 path reads the weights as int8 bytes: a tensor of another dtype is an internal error
// naming it, not a misread.
TEST(MoeFFNEmu, input_of_another_dtype_is_an_internal_error) {
  const Params p = params(DType::kI8, {1}, 1, 1, "relu");
  TensorMap in = make_inputs(p, {{3}, {1}, {}, {1}, {}, {1}, {0}, {1.0f}, {0.1f}});
  in["weight1"] = in.at("weight1").converted(DType::kF16);
  TensorMap out{{"y", Tensor::zeros(DType::kF16, {1, 1})}};
  const Status st = run(p, in, out, "");
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.to_string().find("weight1"), std::string::npos) << st.to_string();
}

// Row blocks run on several threads; the result must not depend on their scheduling.
TEST(MoeFFNEmu, deterministic_over_runs) {
  const auto [p, k] = mc::Builder().tokens({70, 0, 130, 5}).k1(40).n1(72).bias1().bias2().build();
  const TensorMap in = mc::fill(p, k, ref::moe_ffn::specs(p), FillMode::kRealistic, 11).value();
  const Tensor first = run_emu(p, in);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(run_emu(p, in).bytes_equal(first));
  for (int64_t i = 0; i < first.numel(); ++i) ASSERT_NE(first.bits(i), poison_bits(DType::kF16)) << i;
}



// Runs fn once on every ISA path this CPU has (scalar included: it runs the table's narrowest row)
// and at 1, 2 and 7 threads, then restores both.
template <class Fn>
void on_every_path_and_thread_count(Fn fn) {
  const math::Isa isa_before = math::isa();
  for (math::Isa isa : supported_isas()) {
    math::set_isa(isa);
    for (int64_t threads : {1, 2, 7}) {
      math::set_threads(threads);
      fn(std::string(math::isa_name(isa)) + " at " + std::to_string(threads) + " threads");
    }
  }
  math::set_threads(0);
  math::set_isa(isa_before);
}

// The GEMM table has a row for every vector path this CPU runs (x86-64: sse2, avx2, avx512 as far
// as supported; aarch64: neon), so the loops above reach each; scalar has none (it runs the first).
TEST(MoeFFNEmu, every_supported_vector_path_has_a_gemm_row) {
  std::vector<math::Isa> want;
  for (math::Isa isa : supported_isas()) {
    if (isa != math::Isa::kScalar) want.push_back(isa);
  }
  EXPECT_EQ(kernel_isas(), want);
  ASSERT_FALSE(kernel_isas().empty());
  EXPECT_EQ(kernel_isas().front(), std::string(arch_name()) == "aarch64" ? math::Isa::kNeon : math::Isa::kSse2);
}

// The fp32 fractal matmul is vectorised per ISA path (the scalar setting runs the narrowest row's
// code), and so is the int32 one of the int8 paths; every path and thread count must give the
// 1-thread y of the narrowest row bit for bit. fp16 and bf16 (both matmuls fp32), K1 = 300 (a
// second 256-deep block ending inside a fractal), experts of 70, 0, 13 rows (partial register
// tiles), N1 = 45 and K1 columns of 300 (partial 8- to 64-column panels), biases; int8 to fp16 and
// to bf16 with per-channel scales.
TEST(MoeFFNEmu, bit_identical_across_isa_paths_and_threads) {
  for (DType t : {DType::kF16, DType::kBF16, DType::kI8}) {
    for (DType y : {DType::kF16, DType::kBF16}) {
      if (t != DType::kI8 && y != t) continue;
      auto b = mc::Builder().dtype(t).tokens({70, 0, 13}).k1(300).n1(45).bias1().bias2();
      if (t == DType::kI8) b.y_dtype(y).per_channel();
      const auto built = b.build();  // not a structured binding: the lambda below captures p
      const Params& p = built.first;
      const TensorMap in = mc::fill(p, built.second, ref::moe_ffn::specs(p), FillMode::kRealistic, 5).value();
      const math::Isa isa_before = math::isa();
      math::set_threads(1);
      math::set_isa(kernel_isas().front());
      const Tensor base = run_emu(p, in);
      math::set_threads(0);
      math::set_isa(isa_before);
      on_every_path_and_thread_count([&](const std::string& where) {
        EXPECT_TRUE(run_emu(p, in).bytes_equal(base)) << dtype_name(t) << " -> " << dtype_name(y) << " " << where;
      });
    }
  }
}

// The independent formulation of gemm_f32: per output, bias then each 16-deep fractal's own
// sequential fp32 sum added in k order, one element at a time (moe_ffn.h).
std::vector<float> fractal_loop(const std::vector<float>& a, int64_t rows, int64_t kdim, const std::vector<float>& b,
                                int64_t n, const std::vector<float>& bias) {
  std::vector<float> out(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = bias.empty() ? 0.0f : bias[static_cast<size_t>(j)];
      for (int64_t f = 0; f < kdim; f += 16) {
        float part = 0.0f;
        for (int64_t k = f; k < std::min(kdim, f + 16); ++k) {
          const float prod = a[static_cast<size_t>(r * kdim + k)] * b[static_cast<size_t>(k * n + j)];
          part = part + prod;
        }
        acc = acc + part;
      }
      out[static_cast<size_t>(r * n + j)] = acc;
    }
  }
  return out;
}

std::vector<uint32_t> float_bits(const std::vector<float>& v) {
  std::vector<uint32_t> out(v.size());
  std::memcpy(out.data(), v.data(), v.size() * sizeof(float));
  return out;
}

// gemm_f32 on blocks of 16 rows spread over the threads, like the emulator's row blocks.
std::vector<float> matmul_f32(const std::vector<float>& a, int64_t rows, int64_t kdim, const std::vector<float>& b,
                              int64_t n, const std::vector<float>& bias) {
  std::vector<float> out(static_cast<size_t>(rows * n), -7.0f);
  constexpr int64_t kRows = 16;
  math::parallel_for((rows + kRows - 1) / kRows, [&](int64_t blk) {
    const int64_t r0 = blk * kRows;
    gemm_f32(a.data() + r0 * kdim, std::min(kRows, rows - r0), kdim, b.data(), n, bias.empty() ? nullptr : bias.data(),
             out.data() + r0 * n);
  });
  return out;
}

// Floats of mixed signs over 2^-12 .. 2^12 from a fixed LCG: sums whose rounding depends on order.
std::vector<float> floats(int64_t count, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    const auto mant = static_cast<float>((seed >> 40) & 0xFFFFFF) / 16777216.0f;  // [0, 1), 24 bits
    const int exp = static_cast<int>((seed >> 33) % 25) - 12;
    x = std::ldexp((seed >> 32) & 1 ? -1.0f - mant : 1.0f + mant, exp);
  }
  return v;
}

// By hand: a 1 x 32 by 32 x 1 product of ones with b = (2^24, 1 x 15 | 1 x 16). The first fractal's
// 15 ones each tie back to 2^24 (RNE: 2^24 + 1 is halfway, the even neighbour is 2^24), so its sum
// is 2^24; the second fractal's sum is 16, added apart: 2^24 + 16 is exact. A plain sequential sum
// would lose all 31 ones (2^24).
TEST(MoeFFNEmu, float_matmul_sums_each_fractal_apart_by_hand) {
  std::vector<float> b(32, 1.0f);
  b[0] = 16777216.0f;
  on_every_path_and_thread_count([&](const std::string& where) {
    EXPECT_EQ(matmul_f32(std::vector<float>(32, 1.0f), 1, 32, b, 1, {}), std::vector<float>{16777232.0f}) << where;
    // 17 deep: the second fractal is b[16] = 1 alone, 2^24 + 1 ties to 2^24; bias 0.5 first.
    EXPECT_EQ(matmul_f32(std::vector<float>(17, 1.0f), 1, 17, std::vector<float>(b.begin(), b.begin() + 17), 1, {0.5f}),
              std::vector<float>{16777216.0f})
        << where;
  });
}

// Every path against the serial formulation bit for bit, on sizes around every tile edge (rows off
// the 3/6-row tiles, n off the 8- to 32-column panels, k inside a fractal, across fractals and
// across the 256-deep blocks), with and without bias.
TEST(MoeFFNEmu, float_matmul_matches_the_serial_fractal_sum) {
  struct Size {
    int64_t rows, kdim, n;
  };
  const Size sizes[] = {{1, 1, 1}, {5, 1, 17}, {1, 9, 1}, {13, 300, 45}, {6, 256, 64}, {70, 257, 129}, {4, 512, 8},
                        {7, 17, 33}};
  on_every_path_and_thread_count([&](const std::string& where) {
    uint64_t seed = 1;
    for (const Size& z : sizes) {
      for (bool with_bias : {false, true}) {
        const auto a = floats(z.rows * z.kdim, ++seed), b = floats(z.kdim * z.n, ++seed);
        const auto bias = with_bias ? floats(z.n, ++seed) : std::vector<float>{};
        EXPECT_EQ(float_bits(matmul_f32(a, z.rows, z.kdim, b, z.n, bias)),
                  float_bits(fractal_loop(a, z.rows, z.kdim, b, z.n, bias)))
            << z.rows << "x" << z.kdim << "x" << z.n << (with_bias ? " bias " : " ") << where;
      }
    }
  });
}

// The independent formulation of matmul_i32: the same sum in int64 in row / k / column order, then
// reduced mod 2^32 (uint64 -> uint32 keeps the low 32 bits, the two's complement wrap).
std::vector<int32_t> triple_loop(const std::vector<int32_t>& a, int64_t rows, int64_t kdim,
                                 const std::vector<int32_t>& b, int64_t n, const std::vector<int32_t>& bias) {
  std::vector<int32_t> out(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      uint64_t sum = bias.empty() ? 0 : static_cast<uint64_t>(static_cast<int64_t>(bias[static_cast<size_t>(j)]));
      for (int64_t k = 0; k < kdim; ++k) {
        const int64_t prod = static_cast<int64_t>(a[static_cast<size_t>(r * kdim + k)]) *
                             static_cast<int64_t>(b[static_cast<size_t>(k * n + j)]);
        sum += static_cast<uint64_t>(prod);
      }
      out[static_cast<size_t>(r * n + j)] = static_cast<int32_t>(static_cast<uint32_t>(sum));
    }
  }
  return out;
}

// b packed once on the current path, then gemm_i32 on blocks of 16 rows (full and partial register tiles) spread over the threads
// like the emulator's row blocks (each block writes only its rows).
std::vector<int32_t> matmul(const std::vector<int32_t>& a, int64_t rows, int64_t kdim, const std::vector<int32_t>& b,
                            int64_t n, const std::vector<int32_t>& bias) {
  const PackedInts packed = pack_ints(b.data(), kdim, n, n, 1);
  std::vector<int32_t> out(static_cast<size_t>(rows * n), 0x5a5a5a5a);
  constexpr int64_t kRows = 16;
  math::parallel_for((rows + kRows - 1) / kRows, [&](int64_t blk) {
    const int64_t r0 = blk * kRows;
    gemm_i32(a.data() + r0 * kdim, std::min(kRows, rows - r0), kdim, packed, bias.empty() ? nullptr : bias.data(),
             out.data() + r0 * n);
  });
  return out;
}

// Values in [lo, hi] from a fixed LCG, with both ends planted at the front.
std::vector<int32_t> ints(int64_t count, int64_t lo, int64_t hi, uint64_t seed) {
  std::vector<int32_t> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    const auto span = static_cast<uint64_t>(hi - lo + 1);
    v[static_cast<size_t>(i)] = static_cast<int32_t>(lo + static_cast<int64_t>((seed >> 33) % span));
  }
  if (count > 0) v[0] = static_cast<int32_t>(lo);
  if (count > 1) v[1] = static_cast<int32_t>(hi);
  return v;
}

// int8 operands (the int8 path's x, weights and re-quantised hidden values), int32 biases, on
// sizes around every tile edge: k = 1, n = 1, rows and n off the 4/6-row and 8/16/64-column
// tiles, k across the 256-deep blocks, rows over several row blocks; with and without bias. The
// all -128 and all 127 corners reach |sum| = 128 * 128 * 300 + |bias|.
TEST(MoeFFNEmu, int_matmul_matches_a_plain_triple_loop) {
  struct Size {
    int64_t rows, kdim, n;
  };
  const Size sizes[] = {{1, 1, 1}, {5, 1, 17}, {1, 9, 1}, {13, 300, 45}, {6, 256, 64}, {70, 257, 129}, {4, 512, 8}};
  on_every_path_and_thread_count([&](const std::string& where) {
    uint64_t seed = 1;
    for (const Size& z : sizes) {
      for (bool with_bias : {false, true}) {
        const auto a = ints(z.rows * z.kdim, -128, 127, ++seed), b = ints(z.kdim * z.n, -128, 127, ++seed);
        const auto bias = with_bias ? ints(z.n, INT32_MIN, INT32_MAX, ++seed) : std::vector<int32_t>{};
        EXPECT_EQ(matmul(a, z.rows, z.kdim, b, z.n, bias), triple_loop(a, z.rows, z.kdim, b, z.n, bias))
            << z.rows << "x" << z.kdim << "x" << z.n << (with_bias ? " bias " : " ") << where;
      }
    }
    for (int32_t corner : {-128, 127}) {
      const std::vector<int32_t> a(13 * 300, corner), b(300 * 45, -128), bias(45, -7);
      EXPECT_EQ(matmul(a, 13, 300, b, 45, bias), std::vector<int32_t>(13 * 45, corner * -128 * 300 - 7)) << where;
    }
  });
}

// The sums wrap mod 2^32 like the hardware's int32 accumulator, by hand: 46341^2 = 2147488281 =
// 2^32 - 2147479015, so it reads -2147479015; 65536^2 = 2^32 reads 0; INT32_MAX + 1 * 1 reads
// INT32_MIN. Then operands over the whole int32 range against the triple loop.
TEST(MoeFFNEmu, int_matmul_wraps_mod_2_pow_32) {
  on_every_path_and_thread_count([&](const std::string& where) {
    EXPECT_EQ(matmul({46341}, 1, 1, {46341}, 1, {}), std::vector<int32_t>{-2147479015}) << where;
    EXPECT_EQ(matmul({65536, 3}, 1, 2, {65536, 5}, 1, {}), std::vector<int32_t>{15}) << where;
    EXPECT_EQ(matmul({1}, 1, 1, {1}, 1, {INT32_MAX}), std::vector<int32_t>{INT32_MIN}) << where;
    const auto a = ints(9 * 70, INT32_MIN, INT32_MAX, 7), b = ints(70 * 33, INT32_MIN, INT32_MAX, 8);
    const auto bias = ints(33, INT32_MIN, INT32_MAX, 9);
    EXPECT_EQ(matmul(a, 9, 70, b, 33, bias), triple_loop(a, 9, 70, b, 33, bias)) << where;
  });
}

}  // namespace
}  // namespace opgate::emu::moe_ffn
