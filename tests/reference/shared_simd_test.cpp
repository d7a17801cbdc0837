// The vector kernels of reference/math/shared_simd.h: hand-computed values, and every ISA path this
// CPU runs against the plain scalar formulation, bit for bit, on data with tails, signed zeros,
// subnormals, infinities and NaNs.
#include "reference/math/shared_simd.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/dtype.h"

namespace opgate::math {
namespace {

// The vector paths this build and CPU run (x86-64: sse2, avx2, avx512; aarch64: neon).
std::vector<Isa> vector_paths() {
  std::vector<Isa> out = kernel_isas();
  out.erase(out.begin());  // scalar
  return out;
}

// NaNs compare as one value: which NaN operand's payload and sign an addition propagates is not
// part of IEEE 754's contract, and compilers swap the operands of commutative operations (x86 returns
// the first operand's NaN, so Inf - Inf vs an earlier NaN may differ in sign). Everything else is
// compared bit for bit, including signed zeros.
uint64_t bits(double v) {
  if (std::isnan(v)) return 0x7FF8000000000000ull;
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

void expect_same_bits(const std::vector<double>& a, const std::vector<double>& b, const char* what, Isa isa) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(bits(a[i]), bits(b[i])) << what << " on " << isa_name(isa) << " at " << i << ": " << a[i] << " vs "
                                      << b[i];
  }
}

// Values spanning magnitudes, both zeros, subnormals, and (when `special`) Inf and NaN.
std::vector<double> values(size_t n, uint32_t seed, bool special) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    const auto kind = rng() % 16;
    v[i] = u(rng) * std::ldexp(1.0, static_cast<int>(rng() % 40) - 20);
    if (kind == 0) v[i] = -0.0;
    if (kind == 1) v[i] = 0x1p-1070;
    if (special && kind == 2) v[i] = -std::numeric_limits<double>::infinity();
    if (special && kind == 3 && i % 7 == 0) v[i] = std::nan("");
  }
  return v;
}

TEST(SharedSimd, Dot8FollowsTheDocumentedLanesAndTree) {
  // x = 1..10, y = 1: lane 0 = 1 + 9, lane 1 = 2 + 10, lanes 2..7 = 3..8; tree (22 + 7) + (11 + 15).
  std::vector<double> x(10), y(10, 1.0);
  for (int i = 0; i < 10; ++i) x[static_cast<size_t>(i)] = i + 1;
  for (Isa isa : kernel_isas()) {
    double dot = 0, mag = 0;
    kernels(isa).dot8_abs(x.data(), 1, y.data(), 10, &dot, &mag);
    EXPECT_EQ(dot, 55.0) << isa_name(isa);
    EXPECT_EQ(mag, 55.0) << isa_name(isa);
  }
  // The tree, not a left-to-right sum: x = [2^53, 0, 0, 0, 1, 1, 0, 0]. Left to right, 2^53 + 1
  // rounds to 2^53 (tie to even) twice; the tree adds (1 + 1) first: 2^53 + 2, exact.
  std::vector<double> a = {0x1p53, 0, 0, 0, 1, 1, 0, 0}, ones(8, 1.0);
  for (Isa isa : kernel_isas()) {
    double dot = 0, mag = 0;
    kernels(isa).dot8_abs(a.data(), 1, ones.data(), 8, &dot, &mag);
    EXPECT_EQ(dot, 0x1p53 + 2) << isa_name(isa);
  }
}

TEST(SharedSimd, Slot8AndScaledAddByHand) {
  // Slot s holds x = s, b = 1 at every column; g = {1, 2}: sum = (s + 1) * 3, mag likewise.
  std::vector<double> x(16), b(16, 1.0), g = {1.0, 2.0};
  for (int j = 0; j < 2; ++j) {
    for (int s = 0; s < 8; ++s) x[static_cast<size_t>(j * 8 + s)] = s;
  }
  for (Isa isa : kernel_isas()) {
    double sum[8] = {}, mag[8] = {};
    kernels(isa).slot8_dot(x.data(), b.data(), g.data(), 2, sum, mag);
    for (int s = 0; s < 8; ++s) EXPECT_EQ(sum[s], (s + 1) * 3.0) << isa_name(isa);
    std::vector<double> acc = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, inc(11, 0.5);
    kernels(isa).scaled_add(acc.data(), 4.0, inc.data(), 11);
    for (size_t i = 0; i < acc.size(); ++i) EXPECT_EQ(acc[i], static_cast<double>(i) + 3.0) << isa_name(isa);
  }
}

TEST(SharedSimd, GemmPanelByHand) {
  // a = [[1, 2], [3, 4], [5, 6]], panel columns j: b[0][j] = j, b[1][j] = 1: out[r][j] = a0 * j + a1.
  const std::vector<double> a = {1, 2, 3, 4, 5, 6};
  std::vector<double> panel(16);
  for (int j = 0; j < 8; ++j) {
    panel[static_cast<size_t>(j)] = j;
    panel[static_cast<size_t>(8 + j)] = 1;
  }
  for (Isa isa : kernel_isas()) {
    std::vector<double> out(24, -1.0);
    kernels(isa).gemm_panel8(a.data(), 3, 2, 2, panel.data(), out.data(), 8, false);
    for (int r = 0; r < 3; ++r) {
      for (int j = 0; j < 8; ++j) {
        EXPECT_EQ(out[static_cast<size_t>(r * 8 + j)], a[static_cast<size_t>(2 * r)] * j + a[static_cast<size_t>(2 * r + 1)])
            << isa_name(isa);
      }
    }
    // Split over k: the first row of a, then the second, continuing the same sums.
    std::vector<double> split(24, -1.0);
    kernels(isa).gemm_panel8(a.data(), 3, 2, 1, panel.data(), split.data(), 8, false);
    kernels(isa).gemm_panel8(a.data() + 1, 3, 2, 1, panel.data() + 8, split.data(), 8, true);
    EXPECT_EQ(split, out) << isa_name(isa);
  }
}

TEST(SharedSimd, EveryPathMatchesTheScalarFormulationBitForBit) {
  const Kernels& ref = kernels(Isa::kScalar);
  int checked = 0;
  for (Isa isa : vector_paths()) {
    ++checked;
    const Kernels& k = kernels(isa);
    for (int64_t n : {1, 7, 8, 9, 16, 37, 128, 131}) {
      for (bool special : {false, true}) {
        const auto un = static_cast<size_t>(n);
        const std::vector<double> x = values(3 * un, static_cast<uint32_t>(n), special);
        const std::vector<double> y = values(un, static_cast<uint32_t>(n + 1000), special);
        std::vector<double> d1(3), m1(3), d2(3), m2(3);
        ref.dot8_abs(x.data(), 3, y.data(), n, d1.data(), m1.data());
        k.dot8_abs(x.data(), 3, y.data(), n, d2.data(), m2.data());
        expect_same_bits(d1, d2, "dot8_abs dot", isa);
        expect_same_bits(m1, m2, "dot8_abs mag", isa);

        std::vector<double> acc1 = values(un, 7, special), acc2 = acc1;
        for (int rep = 0; rep < 5; ++rep) {
          ref.scaled_add(acc1.data(), y[static_cast<size_t>(rep) % un], x.data(), n);
          k.scaled_add(acc2.data(), y[static_cast<size_t>(rep) % un], x.data(), n);
        }
        expect_same_bits(acc1, acc2, "scaled_add", isa);

        for (bool with_abs : {false, true}) {
          std::vector<double> e1(un), w1(un), t1(un), e2(un), w2(un), t2(un);
          for (int rep = 0; rep < 3; ++rep) {
            const double* abs_x = with_abs ? x.data() + un : nullptr;
            ref.deviation_add(e1.data(), w1.data(), t1.data(), x.data(), y.data(), abs_x, 0.25 + rep, 1e-3, 3e-5, n);
            k.deviation_add(e2.data(), w2.data(), t2.data(), x.data(), y.data(), abs_x, 0.25 + rep, 1e-3, 3e-5, n);
          }
          expect_same_bits(e1, e2, "deviation_add dev", isa);
          expect_same_bits(w1, w2, "deviation_add wsum", isa);
          expect_same_bits(t1, t2, "deviation_add tail", isa);
        }

        // A 13-row product (every row-tile remainder) with lda and ldo wider than the data.
        const std::vector<double> ga = values(13 * (un + 3), 21, special), panel = values(8 * un, 22, special);
        std::vector<double> go1(13 * 10, 1.5), go2 = go1;
        for (bool accumulate : {false, true}) {
          ref.gemm_panel8(ga.data(), 13, n + 3, n, panel.data(), go1.data(), 10, accumulate);
          k.gemm_panel8(ga.data(), 13, n + 3, n, panel.data(), go2.data(), 10, accumulate);
          expect_same_bits(go1, go2, "gemm_panel8", isa);
        }

        const std::vector<double> sx = values(8 * un, 11, special), sb = values(8 * un, 12, special);
        std::vector<double> s1(8, 0.5), g1(8, 0.0), s2 = s1, g2 = g1;
        ref.slot8_dot(sx.data(), sb.data(), y.data(), n, s1.data(), g1.data());
        k.slot8_dot(sx.data(), sb.data(), y.data(), n, s2.data(), g2.data());
        expect_same_bits(s1, s2, "slot8_dot sum", isa);
        expect_same_bits(g1, g2, "slot8_dot mag", isa);
      }
    }
  }
  EXPECT_GE(checked, 1) << "x86-64 always runs the SSE2 path";
}

TEST(SharedSimd, HalfConversionsAreExactOnEveryPath) {
  // Every fp16 and bf16 bit pattern, through each path, equals the table of core/dtype.h.
  std::vector<uint16_t> all(65536);
  for (uint32_t b = 0; b < 65536; ++b) all[b] = static_cast<uint16_t>(b);
  for (bool bf16 : {false, true}) {
    std::vector<double> want(all.size());
    for (uint32_t b = 0; b < 65536; ++b) {
      want[b] = bf16 ? bf16_to_double(static_cast<uint16_t>(b)) : f16_to_double(static_cast<uint16_t>(b));
    }
    for (Isa isa : kernel_isas()) {
      std::vector<double> got(all.size());
      kernels(isa).halves_to_double(all.data(), static_cast<int64_t>(all.size()), bf16, got.data());
      expect_same_bits(want, got, bf16 ? "bf16" : "fp16", isa);
      // An odd start and length exercise the tails.
      std::vector<double> part(1001);
      kernels(isa).halves_to_double(all.data() + 31745, 1001, bf16, part.data());
      expect_same_bits(std::vector<double>(want.begin() + 31745, want.begin() + 31745 + 1001), part,
                       bf16 ? "bf16 tail" : "fp16 tail", isa);
    }
  }
}

TEST(SharedSimd, SelectionFallsBackToASupportedPath) {
  const Isa before = isa();
  EXPECT_TRUE(isa_supported(Isa::kScalar));
  set_isa(Isa::kScalar);
  EXPECT_EQ(isa(), Isa::kScalar);
  // The other architecture's widest path is never supported: the selection falls back.
  const Isa foreign = std::string(arch_name()) == "aarch64" ? Isa::kAvx512 : Isa::kNeon;
  EXPECT_FALSE(isa_supported(foreign));
  set_isa(foreign);
  EXPECT_EQ(isa(), before);
  set_isa(before);
}

TEST(SharedSimd, EveryPathOfTheArchitectureHasKernels) {
  // The baseline vector ISA of each architecture always runs, so a build whose table lost its row
  // (or whose ISA file was not compiled) fails here rather than silently testing scalar only.
  const std::string arch = arch_name();
  const Isa baseline = arch == "aarch64" ? Isa::kNeon : Isa::kSse2;
  ASSERT_TRUE(arch == "x86_64" || arch == "aarch64") << arch;
  EXPECT_TRUE(isa_supported(baseline)) << arch;
  const std::vector<Isa> paths = kernel_isas();
  EXPECT_EQ(paths.front(), Isa::kScalar);
  EXPECT_NE(std::find(paths.begin(), paths.end(), baseline), paths.end()) << isa_name(baseline);
  EXPECT_EQ(paths, supported_isas()) << "every supported path has a row in shared_simd's table";
}

}  // namespace
}  // namespace opgate::math
