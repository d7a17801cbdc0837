// The attention kernels of reference/math/shared_attention.h and halves_to_float of shared_half.h:
// hand-computed values, and every ISA path against an independent formulation (shared_simd.h's
// dot8_abs, scaled_add and deviation_add on the rows converted by core/dtype.h), bit for bit, on
// fp16, bf16 and double rows with tails, head-block remainders, signed zeros, subnormals, Inf and NaN.
#include "reference/math/shared_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/dtype.h"
#include "reference/math/shared_half.h"
#include "reference/math/shared_simd.h"

namespace opgate::math {
namespace {

// NaNs compare as one value (see shared_simd_test.cpp); everything else bit for bit.
uint64_t bits(double v) {
  if (std::isnan(v)) return 0x7FF8000000000000ull;
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

void expect_same_bits(const std::vector<double>& want, const std::vector<double>& got, const char* what, Isa isa) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(bits(want[i]), bits(got[i])) << what << " on " << isa_name(isa) << " at " << i << ": " << want[i]
                                           << " vs " << got[i];
  }
}

// Rows of one type: the bits the kernels read and the exact doubles (core/dtype.h) they stand for.
struct Rows {
  RowType type = RowType::kF64;
  std::vector<uint16_t> halves;
  std::vector<double> values;
  const void* data() const { return type == RowType::kF64 ? static_cast<const void*>(values.data()) : halves.data(); }
};

// Values of moderate range; with `special`, also signed zeros, subnormals, Inf and NaN.
Rows make_rows(RowType type, size_t count, uint32_t seed, bool special) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  Rows r;
  r.type = type;
  r.values.resize(count);
  r.halves.resize(count);
  for (size_t i = 0; i < count; ++i) {
    double v = u(rng);
    const auto kind = rng() % 32;
    if (kind == 0) v = -0.0;
    if (kind == 1) v = 0x1p-20;  // subnormal in fp16
    if (special && kind == 2) v = -INFINITY;
    if (special && kind == 3) v = NAN;
    if (type == RowType::kF64) {
      r.values[i] = v;
      continue;
    }
    const bool bf16 = type == RowType::kBF16;
    r.halves[i] = bf16 ? bf16_from_double(v) : f16_from_double(v);
    if (special && kind == 4) r.halves[i] = bf16 ? 0x7F81 : 0x7C01;  // a signalling NaN pattern
    r.values[i] = bf16 ? bf16_to_double(r.halves[i]) : f16_to_double(r.halves[i]);
  }
  return r;
}

std::vector<double> doubles(size_t n, uint32_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

TEST(SharedAttention, ScoresFollowTheDot8LanesAndTree) {
  // q = [2^53, 0, 0, 0, 1, 1, 0, 0] . ones: left to right 2^53 + 1 rounds to 2^53 twice; the tree
  // adds (1 + 1) first: 2^53 + 2. Five heads (a block remainder on every path), two rows.
  std::vector<double> q;
  for (int h = 0; h < 5; ++h) q.insert(q.end(), {0x1p53, 0, 0, 0, 1, 1, 0, 0});
  const std::vector<double> ones(16, 1.0);
  // fp16 rows, n = 10: q = 1..10 against ones, lane 0 = 1 + 9, lane 1 = 2 + 10: 55.
  std::vector<double> q10(10);
  for (int i = 0; i < 10; ++i) q10[static_cast<size_t>(i)] = i + 1;
  const std::vector<uint16_t> half_ones(10, 0x3C00);
  for (Isa isa : attention_isas()) {
    std::vector<double> dot(10, -1), mag(10, -1);
    attention_kernels(isa).scores(q.data(), 5, ones.data(), RowType::kF64, 2, 8, dot.data(), mag.data());
    for (double d : dot) EXPECT_EQ(d, 0x1p53 + 2) << isa_name(isa);
    double d10 = 0, m10 = 0;
    attention_kernels(isa).scores(q10.data(), 1, half_ones.data(), RowType::kF16, 1, 10, &d10, &m10);
    EXPECT_EQ(d10, 55.0) << isa_name(isa);
    EXPECT_EQ(m10, 55.0) << isa_name(isa);
  }
}

TEST(SharedAttention, WeightedRowsAndDeviationByHand) {
  // Two rows of bf16 [1, -2, ...] and [3, 4, ...] (n = 9), two heads with p = {0.5, 2} and {1, -1}:
  // acc = 0.5 * r0 + 1 * r1 and 2 * r0 - r1.
  const int64_t n = 9;
  std::vector<uint16_t> rows(2 * n);
  for (int64_t i = 0; i < n; ++i) {
    rows[static_cast<size_t>(i)] = bf16_from_double(i % 2 == 0 ? 1.0 : -2.0);
    rows[static_cast<size_t>(n + i)] = bf16_from_double(i % 2 == 0 ? 3.0 : 4.0);
  }
  const std::vector<double> p = {0.5, 2.0, 1.0, -1.0};  // [row][head]
  for (Isa isa : attention_isas()) {
    std::vector<double> acc(2 * n, 0.0);
    std::vector<char> flags(2, 0);
    attention_kernels(isa).weighted_rows(acc.data(), 2, p.data(), rows.data(), RowType::kBF16, 2, n, flags.data());
    for (int64_t i = 0; i < n; ++i) {
      const bool even = i % 2 == 0;
      EXPECT_EQ(acc[static_cast<size_t>(i)], even ? 3.5 : 3.0) << isa_name(isa);
      EXPECT_EQ(acc[static_cast<size_t>(n + i)], even ? -1.0 : -8.0) << isa_name(isa);
    }
    EXPECT_EQ(flags, std::vector<char>(2, 0)) << isa_name(isa);
    // Deviation from c = 1 with wd = w = 1 for head 0 only (head 1 all 0): dev = |1-1| + |3-1| or
    // |-2-1| + |4-1|; wsum = |r0| + |r1|. f = 1 on row 0 only (row 1, left out of tail_rows, has
    // f = 0 as the contract requires): tail = |r0|.
    std::vector<double> dev(2 * n, 0.0), wsum(2 * n, 0.0), tail(2 * n, 0.0), c(2 * n, 1.0);
    const std::vector<double> wd = {1, 0, 1, 0}, w = wd, f = {1, 0, 0, 0};
    const std::vector<char> tail_rows = {1, 0};
    attention_kernels(isa).deviation_rows(dev.data(), wsum.data(), tail.data(), c.data(), 2, wd.data(), w.data(),
                                          f.data(), tail_rows.data(), rows.data(), RowType::kBF16, nullptr, 2, n);
    for (int64_t i = 0; i < n; ++i) {
      const bool even = i % 2 == 0;
      EXPECT_EQ(dev[static_cast<size_t>(i)], even ? 2.0 : 6.0) << isa_name(isa);
      EXPECT_EQ(wsum[static_cast<size_t>(i)], even ? 4.0 : 6.0) << isa_name(isa);
      EXPECT_EQ(tail[static_cast<size_t>(i)], even ? 1.0 : 2.0) << isa_name(isa);
      EXPECT_EQ(dev[static_cast<size_t>(n + i)], 0.0) << isa_name(isa);
    }
  }
}

// Every path against shared_simd.h's scalar dot8_abs / scaled_add / deviation_add applied row by
// row to the converted values.
TEST(SharedAttention, EveryPathMatchesTheSharedSimdFormulationBitForBit) {
  const Kernels& simd = kernels(Isa::kScalar);
  int checked = 0;
  for (Isa isa : attention_isas()) {
    ++checked;
    const AttentionKernels& k = attention_kernels(isa);
    for (RowType type : {RowType::kF64, RowType::kF16, RowType::kBF16}) {
      for (int64_t n : {1, 8, 16, 36, 128, 131}) {
        for (int64_t heads : {1, 3, 4, 5, 8}) {
          for (bool special : {false, true}) {
            const int64_t count = 11;
            const auto un = static_cast<size_t>(n), uh = static_cast<size_t>(heads), uc = static_cast<size_t>(count);
            const uint32_t seed = static_cast<uint32_t>(n * 131 + heads * 7 + (special ? 1 : 0));
            const Rows rows = make_rows(type, uc * un, seed, special);
            const Rows qrows = make_rows(RowType::kF64, uh * un, seed + 1, special);
            const std::vector<double>& q = qrows.values;
            const char* where = type == RowType::kF64 ? "f64" : (type == RowType::kF16 ? "f16" : "bf16");

            std::vector<double> dot(uc * uh), mag(dot.size()), want_dot(dot.size()), want_mag(dot.size());
            k.scores(q.data(), heads, rows.data(), type, count, n, dot.data(), mag.data());
            for (size_t r = 0; r < uc; ++r) {
              simd.dot8_abs(q.data(), heads, rows.values.data() + r * un, n, want_dot.data() + r * uh,
                            want_mag.data() + r * uh);
            }
            expect_same_bits(want_dot, dot, where, isa);
            expect_same_bits(want_mag, mag, where, isa);

            const std::vector<double> p = doubles(uc * uh, seed + 2, 0.0, 1.0);
            std::vector<double> acc = doubles(uh * un, seed + 3, -1.0, 1.0), want_acc = acc;
            std::vector<char> flags(uc, 0), want_flags(uc, 0);
            k.weighted_rows(acc.data(), heads, p.data(), rows.data(), type, count, n,
                            type == RowType::kF64 ? nullptr : flags.data());
            for (size_t r = 0; r < uc; ++r) {
              for (size_t h = 0; h < uh; ++h) {
                simd.scaled_add(want_acc.data() + h * un, p[r * uh + h], rows.values.data() + r * un, n);
              }
              for (size_t i = 0; i < un; ++i) {
                if (type != RowType::kF64 && !std::isfinite(rows.values[r * un + i])) want_flags[r] = 1;
              }
            }
            expect_same_bits(want_acc, acc, where, isa);
            EXPECT_EQ(want_flags, flags) << where << " on " << isa_name(isa);

            const std::vector<double> c = doubles(uh * un, seed + 4, -1.0, 1.0);
            const std::vector<double> wd = doubles(uc * uh, seed + 5, 0.0, 2.0), w = doubles(uc * uh, seed + 6, 0.0, 1.0);
            std::vector<double> f = doubles(uc * uh, seed + 7, 0.0, 1e-4);
            const Rows abs_rows = make_rows(RowType::kF64, uc * un, seed + 8, false);
            for (bool with_abs : {false, true}) {
              const double* abs_x = with_abs ? abs_rows.values.data() : nullptr;
              std::vector<double> dev(uh * un, 0.5), wsum(dev.size(), 0.25), tail(dev.size(), 0.125);
              std::vector<double> want_dev = dev, want_wsum = wsum, want_tail = tail;
              k.deviation_rows(dev.data(), wsum.data(), tail.data(), c.data(), heads, wd.data(), w.data(), f.data(),
                               nullptr, rows.data(), type, abs_x, count, n);
              for (size_t r = 0; r < uc; ++r) {
                for (size_t h = 0; h < uh; ++h) {
                  simd.deviation_add(want_dev.data() + h * un, want_wsum.data() + h * un, want_tail.data() + h * un,
                                     rows.values.data() + r * un, c.data() + h * un,
                                     abs_x != nullptr ? abs_x + r * un : nullptr, wd[r * uh + h], w[r * uh + h],
                                     f[r * uh + h], n);
                }
              }
              expect_same_bits(want_dev, dev, where, isa);
              expect_same_bits(want_wsum, wsum, where, isa);
              expect_same_bits(want_tail, tail, where, isa);
            }
          }
        }
      }
    }
  }
  EXPECT_GE(checked, 2) << "scalar and the baseline vector path (x86-64 SSE2, aarch64 NEON) run on every CPU";
}

TEST(SharedAttention, RowsLeftOutOfTheTailAddExactZeros) {
  // The contract the reference relies on: rows whose f are 0 and whose values are finite may be
  // left out of tail_rows without changing any bit of dev, wsum or tail.
  const int64_t n = 37, heads = 5, count = 13;
  const auto un = static_cast<size_t>(n), uh = static_cast<size_t>(heads), uc = static_cast<size_t>(count);
  for (Isa isa : attention_isas()) {
    const Rows rows = make_rows(RowType::kF16, uc * un, 99, false);
    const std::vector<double> c = doubles(uh * un, 1, -1, 1), wd = doubles(uc * uh, 2, 0, 1), w = doubles(uc * uh, 3, 0, 1);
    std::vector<double> f = doubles(uc * uh, 4, 0, 1e-5);
    std::vector<char> tail_rows(uc, 1);
    for (size_t r = 0; r < uc; r += 2) {
      for (size_t h = 0; h < uh; ++h) f[r * uh + h] = 0.0;
      tail_rows[r] = 0;
    }
    std::vector<double> dev(uh * un, 0.0), wsum(dev.size(), 0.0), tail(dev.size(), 0.0);
    std::vector<double> all_dev = dev, all_wsum = wsum, all_tail = tail;
    const AttentionKernels& k = attention_kernels(isa);
    k.deviation_rows(dev.data(), wsum.data(), tail.data(), c.data(), heads, wd.data(), w.data(), f.data(),
                     tail_rows.data(), rows.data(), RowType::kF16, nullptr, count, n);
    k.deviation_rows(all_dev.data(), all_wsum.data(), all_tail.data(), c.data(), heads, wd.data(), w.data(), f.data(),
                     nullptr, rows.data(), RowType::kF16, nullptr, count, n);
    expect_same_bits(all_dev, dev, "dev", isa);
    expect_same_bits(all_wsum, wsum, "wsum", isa);
    expect_same_bits(all_tail, tail, "tail", isa);
    EXPECT_GT(tail[0], 0.0) << "rows with f > 0 still count";
  }
}

TEST(SharedAttention, HalvesToFloatIsExactOnEveryPath) {
  // Every fp16 and bf16 bit pattern equals (float) of core/dtype.h's exact double, NaN bits included;
  // an odd start and length exercise the tails.
  std::vector<uint16_t> all(65536);
  for (uint32_t b = 0; b < 65536; ++b) all[b] = static_cast<uint16_t>(b);
  const Isa before = isa();
  for (bool bf16 : {false, true}) {
    std::vector<float> want(all.size());
    for (uint32_t b = 0; b < 65536; ++b) {
      const auto h = static_cast<uint16_t>(b);
      want[b] = static_cast<float>(bf16 ? bf16_to_double(h) : f16_to_double(h));
    }
    for (Isa path : half_isas()) {
      set_isa(path);
      std::vector<float> got(all.size());
      halves_to_float(all.data(), static_cast<int64_t>(all.size()), bf16, got.data());
      EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << isa_name(path);
      std::vector<float> part(1001);
      halves_to_float(all.data() + 31745, 1001, bf16, part.data());
      EXPECT_EQ(std::memcmp(want.data() + 31745, part.data(), part.size() * sizeof(float)), 0) << isa_name(path);
    }
  }
  set_isa(before);
}

TEST(SharedAttention, EveryPathOfTheArchitectureHasKernels) {
  // Every path this CPU runs has its row in the attention table and in halves_to_float's, so the
  // tests above compare every path of the architecture (x86-64: scalar, sse2, avx2, avx512 where
  // the CPU has them; aarch64: scalar, neon) with the independent formulation.
  const std::string arch = arch_name();
  const Isa baseline = arch == "aarch64" ? Isa::kNeon : Isa::kSse2;
  ASSERT_TRUE(arch == "x86_64" || arch == "aarch64") << arch;
  for (const std::vector<Isa>& paths : {attention_isas(), half_isas()}) {
    EXPECT_EQ(paths.front(), Isa::kScalar);
    EXPECT_NE(std::find(paths.begin(), paths.end(), baseline), paths.end()) << isa_name(baseline);
    EXPECT_EQ(paths, supported_isas());
  }
}

}  // namespace
}  // namespace opgate::math
