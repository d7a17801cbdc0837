// The blocked double product of reference/math/shared_gemm.h: hand-computed sums whose value
// depends on the order of the additions and on the absence of FMA, every ISA path against a plain
// triple loop written here (bit for bit, on shapes with partial register tiles, partial panels and
// several k blocks), the fp16/bf16 operand against its converted doubles, and the MoeFFN reference
// on a model-like case (fp16 activation table, several k blocks) at 1, 2 and 7 threads on every path.
#include "reference/math/shared_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cases/moe_ffn.h"
#include "core/dtype.h"
#include "core/parallel.h"
#include "reference/math/shared_gemm_paths.h"
#include "reference/moe_ffn.h"

namespace opgate::math {
namespace {

struct Settings {
  Isa isa_before = isa();
  ~Settings() {
    set_threads(0);
    set_isa(isa_before);
  }
};

// NaNs compare as one value (which operand's payload an addition keeps is not IEEE 754's
// contract); everything else bit for bit, signed zeros included.
uint64_t bits(double v) {
  if (std::isnan(v)) return 0x7FF8000000000000ull;
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// The definition, independently of the library: c[r][j] = ((0 + a0 b0) + a1 b1) + ..., each
// product rounded (volatile keeps the compiler from fusing even without -ffp-contract=off).
std::vector<double> plain_product(const std::vector<double>& a, const std::vector<double>& b, bool abs_b,
                                  int64_t rows, int64_t kdim, int64_t n) {
  std::vector<double> c(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t k = 0; k < kdim; ++k) {
        const double bv = b[static_cast<size_t>(k * n + j)];
        volatile double p = a[static_cast<size_t>(r * kdim + k)] * (abs_b ? std::fabs(bv) : bv);
        acc += p;
      }
      c[static_cast<size_t>(r * n + j)] = acc;
    }
  }
  return c;
}

std::vector<double> product(Isa isa, const std::vector<double>& a, const std::vector<double>& b, bool abs_b,
                            int64_t rows, int64_t kdim, int64_t n) {
  std::vector<double> c(static_cast<size_t>(rows * n), 123.0);  // overwritten: no stale partial sums
  gemm(a.data(), kdim, b.data(), n, abs_b, rows, kdim, n, c.data(), n, isa);
  return c;
}

TEST(SharedGemm, EveryPathOfTheArchitectureHasKernels) {
  // Every path this CPU runs has its row in the product's table, so the tests below compare every
  // path of the architecture (aarch64: scalar and neon) with the plain loop.
  const std::string arch = arch_name();
  const Isa baseline = arch == "aarch64" ? Isa::kNeon : Isa::kSse2;
  ASSERT_TRUE(arch == "x86_64" || arch == "aarch64") << arch;
  const std::vector<Isa> paths = gemm_isas();
  EXPECT_EQ(paths.front(), Isa::kScalar);
  EXPECT_NE(std::find(paths.begin(), paths.end(), baseline), paths.end()) << isa_name(baseline);
  EXPECT_EQ(paths, supported_isas());
}

TEST(SharedGemm, SumsInIncreasingKAcrossBlocksWithoutFma) {
  // One row, one column, K = 300 (two k blocks of the vector paths): b[0] = 2^53, b[256] = 1,
  // b[299] = -2^53, a = 1. In order: 2^53 + 1 rounds to 2^53 (tie to even), minus 2^53 is 0; any
  // other order (e.g. the 1 added last) gives 1.
  const int64_t k = 300;
  std::vector<double> a(k, 1.0), b(k, 0.0);
  b[0] = 0x1p53;
  b[256] = 1;
  b[299] = -0x1p53;
  // No FMA: k = 2 more, a = [1, 1 + 2^-30], b = [-(1 + 2^-29), 1 + 2^-30]. The rounded product
  // (1 + 2^-30)^2 is 1 + 2^-29, so the sum is 0; a fused a1*b1 + acc would keep 2^-60.
  std::vector<double> a2 = {1.0, 1 + 0x1p-30}, b2 = {-(1 + 0x1p-29), 1 + 0x1p-30};
  for (Isa isa : gemm_isas()) {
    EXPECT_EQ(product(isa, a, b, false, 1, k, 1)[0], 0.0) << isa_name(isa);
    // |b|: 2^53 + 1 -> 2^53, + 2^53 = 2^54.
    EXPECT_EQ(product(isa, a, b, true, 1, k, 1)[0], 0x1p54) << isa_name(isa);
    EXPECT_EQ(product(isa, a2, b2, false, 1, 2, 1)[0], 0.0) << isa_name(isa);
  }
}

TEST(SharedGemm, SmallProductByHand) {
  // [1 2; 3 4] x [5 -6; 7 8] = [19 10; 43 14]; with |b|: [19 22; 43 50]. K = 0 gives zeros.
  const std::vector<double> a = {1, 2, 3, 4}, b = {5, -6, 7, 8};
  for (Isa isa : gemm_isas()) {
    EXPECT_EQ(product(isa, a, b, false, 2, 2, 2), (std::vector<double>{19, 10, 43, 14})) << isa_name(isa);
    EXPECT_EQ(product(isa, a, b, true, 2, 2, 2), (std::vector<double>{19, 22, 43, 50})) << isa_name(isa);
    EXPECT_EQ(product(isa, {}, {}, false, 2, 0, 3), (std::vector<double>(6, 0.0))) << isa_name(isa);
  }
}

// Values spanning 2^-30..2^30 with both zeros, double subnormals and (when `special`) infinities
// and NaNs.
std::vector<double> values(size_t n, uint32_t seed, bool special) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    const auto kind = rng() % 32;
    v[i] = u(rng) * std::ldexp(1.0, static_cast<int>(rng() % 60) - 30);
    if (kind == 0) v[i] = -0.0;
    if (kind == 1) v[i] = 0x1p-1070;
    if (special && kind == 2 && i % 5 == 0) v[i] = -std::numeric_limits<double>::infinity();
    if (special && kind == 3 && i % 11 == 0) v[i] = std::nan("");
  }
  return v;
}

TEST(SharedGemm, EveryPathMatchesThePlainLoopBitForBit) {
  // Rows around the register tiles (4 on sse2, 6 on avx2, 4 on avx512 and neon), columns around
  // the panels (8, 32), K around the 256-deep blocks; full tiles only ({12, 300, 64}) and partial
  // tiles, panels and k blocks together ({25, 513, 97}).
  const int64_t shapes[][3] = {{1, 1, 1},     {3, 7, 5},      {9, 17, 23},    {13, 256, 16},
                               {17, 257, 33}, {8, 600, 40},   {12, 300, 64},  {25, 513, 97}};
  uint32_t seed = 1;
  for (const auto& s : shapes) {
    const int64_t rows = s[0], kdim = s[1], n = s[2];
    for (bool special : {false, true}) {
      const std::vector<double> a = values(static_cast<size_t>(rows * kdim), seed++, special);
      const std::vector<double> b = values(static_cast<size_t>(kdim * n), seed++, special);
      const std::vector<double> w = values(static_cast<size_t>(rows * kdim), seed++, special);
      for (bool abs_b : {false, true}) {
        const std::vector<double> want = plain_product(a, b, abs_b, rows, kdim, n);
        for (Isa isa : gemm_isas()) {
          const std::vector<double> got = product(isa, a, b, abs_b, rows, kdim, n);
          for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_EQ(bits(got[i]), bits(want[i])) << isa_name(isa) << " " << rows << "x" << kdim << "x" << n
                                                   << " abs " << abs_b << " at " << i << ": " << got[i] << " vs "
                                                   << want[i];
          }
        }
      }
      // Both products from one packed panel: each the single product's, bit for bit.
      const std::vector<double> want_c = plain_product(a, b, false, rows, kdim, n);
      const std::vector<double> want_mag = plain_product(w, b, true, rows, kdim, n);
      for (Isa isa : gemm_isas()) {
        std::vector<double> c(want_c.size(), 123.0), mag(want_c.size(), 456.0);
        gemm_with_magnitude(a.data(), w.data(), kdim, b.data(), n, rows, kdim, n, c.data(), mag.data(), n, isa);
        for (size_t i = 0; i < want_c.size(); ++i) {
          ASSERT_EQ(bits(c[i]), bits(want_c[i])) << isa_name(isa) << " " << rows << "x" << kdim << "x" << n
                                                 << " pair, value at " << i;
          ASSERT_EQ(bits(mag[i]), bits(want_mag[i])) << isa_name(isa) << " " << rows << "x" << kdim << "x" << n
                                                     << " pair, magnitude at " << i;
        }
      }
    }
  }
}

TEST(SharedGemm, HalfOperandsEqualTheirConvertedDoubles) {
  // Every fp16 / bf16 pattern class (subnormals, infinities, NaNs) among random bits; strided
  // leading dimensions (a sub-block of wider matrices); full and partial tiles and panels, 2 k blocks.
  const int64_t rows = 13, kdim = 270, n = 45, lda = kdim + 3, ldb = n + 5, ldc = n + 2;
  std::mt19937 rng(7);
  const std::vector<double> a = values(static_cast<size_t>(rows * lda), 99, false);
  std::vector<uint16_t> h(static_cast<size_t>(kdim * ldb));
  for (auto& v : h) v = static_cast<uint16_t>(rng());
  for (bool bf16 : {false, true}) {
    std::vector<double> b(h.size());
    for (size_t i = 0; i < h.size(); ++i) b[i] = bf16 ? bf16_to_double(h[i]) : f16_to_double(h[i]);
    for (bool abs_b : {false, true}) {
      for (Isa isa : gemm_isas()) {
        std::vector<double> want(static_cast<size_t>(rows * ldc), -1.0), got(want);
        gemm(a.data(), lda, b.data(), ldb, abs_b, rows, kdim, n, want.data(), ldc, isa);
        gemm_halves(a.data(), lda, h.data(), bf16, ldb, abs_b, rows, kdim, n, got.data(), ldc, isa);
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_EQ(bits(got[i]), bits(want[i])) << isa_name(isa) << " bf16 " << bf16 << " at " << i;
        }
        // Columns n..ldc of each row are not the product's: left untouched.
        EXPECT_EQ(got[static_cast<size_t>(n)], -1.0);
      }
    }
    // Both products from one converted panel, against the single products on the doubles.
    const std::vector<double> w = values(static_cast<size_t>(rows * lda), 100, false);
    for (Isa isa : gemm_isas()) {
      std::vector<double> want_c(static_cast<size_t>(rows * ldc), -1.0), want_mag(want_c), c(want_c), mag(want_c);
      gemm(a.data(), lda, b.data(), ldb, false, rows, kdim, n, want_c.data(), ldc, isa);
      gemm(w.data(), lda, b.data(), ldb, true, rows, kdim, n, want_mag.data(), ldc, isa);
      gemm_halves_with_magnitude(a.data(), w.data(), lda, h.data(), bf16, ldb, rows, kdim, n, c.data(), mag.data(),
                                 ldc, isa);
      for (size_t i = 0; i < c.size(); ++i) {
        ASSERT_EQ(bits(c[i]), bits(want_c[i])) << isa_name(isa) << " bf16 " << bf16 << " pair, value at " << i;
        ASSERT_EQ(bits(mag[i]), bits(want_mag[i])) << isa_name(isa) << " bf16 " << bf16 << " pair, magnitude at " << i;
      }
    }
  }
}

std::string fingerprint(const RefOutputs& out) {
  std::string s;
  for (const auto* m : {&out.expected, &out.magnitude}) {
    for (const auto& [name, t] : *m) {
      s += name;
      s.append(reinterpret_cast<const char*>(t.ptr<double>()), static_cast<size_t>(t.nbytes()));
    }
  }
  return s;
}

TEST(SharedGemm, MoeFfnAtModelShapesIsBitIdenticalAcrossThreadsAndIsa) {
  // fp16 high performance with M * N1 over the activation table's threshold (2^18), K1 = 300 (a
  // second k block), experts of 150, 0 and 37 rows (partial register tiles), N1 = 1420 (a partial
  // panel), biases. Scalar at 1 thread is the baseline; values and magnitudes must match.
  namespace mffn = cases::moe_ffn;
  const auto pk = mffn::Builder().tokens({150, 0, 37}).k1(300).n1(1420).bias1().bias2().build();
  ASSERT_GE(pk.first.m * pk.first.n1, int64_t{1} << 18);
  const auto in = mffn::fill(pk.first, pk.second, ref::moe_ffn::specs(pk.first), FillMode::kRealistic, 4);
  ASSERT_TRUE(in.has_value()) << in.status().message();
  Settings restore;
  set_threads(1);
  set_isa(Isa::kScalar);
  const std::string base = fingerprint(ref::moe_ffn::reference(pk.first, in.value()));
  for (Isa isa : gemm_isas()) {
    set_isa(isa);
    for (int64_t t : {1, 2, 7}) {
      if (isa == Isa::kScalar && t == 1) continue;
      set_threads(t);
      EXPECT_TRUE(fingerprint(ref::moe_ffn::reference(pk.first, in.value())) == base)
          << "differs at " << t << " threads on " << isa_name(isa);
    }
  }
}

}  // namespace
}  // namespace opgate::math
