// The block functions of CounterRng on every instruction-set path the CPU has, against the scalar
// calls bit for bit: runs that start anywhere (low-word carry, wrap at 2^64), every length around
// the vector widths, integer ranges whose rejection path is taken about half the time, and the
// Random123 known answers landing inside vector lanes.

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "core/dtype.h"
#include "core/isa.h"
#include "core/rng.h"

namespace opgate {
namespace {

// Restores the default path when a test ends, so other tests see the dispatcher's choice.
class RngPathScope {
 public:
  RngPathScope() : saved_(rng_path()) {}
  ~RngPathScope() { set_rng_path(saved_); }

 private:
  RngPath saved_;
};

// The table's paths this CPU runs (x86-64: scalar, avx2, avx512; aarch64: scalar, neon).
std::vector<RngPath> supported_paths() { return rng_paths(); }

const uint64_t kFirsts[] = {0, 5, 0xFFFFFFFFull - 20, 0x1234567890ull, ~uint64_t{0} - 40};
const int64_t kLengths[] = {0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 511, 512, 513, 1500};

TEST(RngBlocks, scalar_path_is_always_supported_and_names_are_distinct) {
  EXPECT_TRUE(rng_path_supported(RngPath::kScalar));
  EXPECT_STREQ(rng_path_name(RngPath::kScalar), "scalar");
  EXPECT_STREQ(rng_path_name(RngPath::kAvx2), "avx2");
  EXPECT_STREQ(rng_path_name(RngPath::kAvx512), "avx512");
  EXPECT_STREQ(rng_path_name(RngPath::kNeon), "neon");
}

// Every path this CPU runs has a Philox row except x86-64's SSE2 (which runs the scalar code), so
// the tests below cover each vector path of the build's architecture; no other architecture's.
TEST(RngBlocks, every_supported_vector_path_has_a_row) {
  std::vector<RngPath> want;
  for (Isa isa : supported_isas()) {
    if (isa != Isa::kSse2) want.push_back(isa);
  }
  EXPECT_EQ(rng_paths(), want);
  EXPECT_EQ(rng_paths().front(), RngPath::kScalar);
  for (Isa isa : {Isa::kSse2, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    const bool own = std::find(arch_isas().begin(), arch_isas().end(), isa) != arch_isas().end();
    if (!own) {
      EXPECT_FALSE(rng_path_supported(isa)) << isa_name(isa) << " on " << arch_name();
    }
  }
  EXPECT_FALSE(rng_path_supported(Isa::kSse2));
}

TEST(RngBlocks, random123_known_answers_inside_vector_lanes) {
  RngPathScope scope;
  for (RngPath path : supported_paths()) {
    set_rng_path(path);
    // Counter {0,0,0,0}, key {0,0}: index 0 of seed 0, stream 0, first lane of the first vector.
    std::vector<uint64_t> out(40);
    CounterRng(0, 0).bits_block(0, 40, out.data());
    EXPECT_EQ(out[0], 0x6627e8d5ull | (0xe169c58dull << 32)) << rng_path_name(path);
    // Counter all ones, key all ones: index 2^64 - 1 is lane 21 of a run starting 21 below it.
    CounterRng(~uint64_t{0}, ~uint64_t{0}).bits_block(~uint64_t{0} - 21, 40, out.data());
    EXPECT_EQ(out[21], 0x408f276dull | (0x41c83b0eull << 32)) << rng_path_name(path);
    // The pi-digits vector: index 0x85a308d3243f6a88 at lane 13.
    CounterRng(0x299f31d0a4093822ull, 0x0370734413198a2eull).bits_block(0x85a308d3243f6a88ull - 13, 40, out.data());
    EXPECT_EQ(out[13], 0xd16cfe09ull | (0x94fdccebull << 32)) << rng_path_name(path);
  }
}

TEST(RngBlocks, every_path_matches_the_scalar_calls) {
  RngPathScope scope;
  const CounterRng rngs[] = {CounterRng(1, "gradY"), CounterRng(0xDEADBEEFull, ~uint64_t{0}), CounterRng(0, 0)};
  for (RngPath path : supported_paths()) {
    set_rng_path(path);
    for (const CounterRng& rng : rngs) {
      for (uint64_t first : kFirsts) {
        for (int64_t n : kLengths) {
          SCOPED_TRACE(testing::Message() << rng_path_name(path) << " first " << first << " n " << n);
          std::vector<uint64_t> b(static_cast<size_t>(n) + 1, 7);
          std::vector<double> u(b.size(), 7), r(b.size(), 7), z(b.size(), 7);
          rng.bits_block(first, n, b.data());
          rng.uniform_block(first, n, u.data());
          rng.uniform_block(first, n, -1.7320508075688772, 1.7320508075688772, r.data());
          rng.normal_block(first, n, z.data());
          for (int64_t i = 0; i < n; ++i) {
            const uint64_t index = first + static_cast<uint64_t>(i);
            const auto k = static_cast<size_t>(i);
            ASSERT_EQ(b[k], rng.bits(index));
            ASSERT_EQ(double_bits(u[k]), double_bits(rng.uniform(index)));
            ASSERT_EQ(double_bits(r[k]), double_bits(rng.uniform(index, -1.7320508075688772, 1.7320508075688772)));
            ASSERT_EQ(double_bits(z[k]), double_bits(rng.normal(index)));
          }
          // Nothing past the run is written.
          EXPECT_EQ(b.back(), 7u);
          EXPECT_EQ(z.back(), 7.0);
        }
      }
    }
  }
}

TEST(RngBlocks, uniform_block_of_an_empty_width_range_is_the_bound) {
  std::vector<double> out(3);
  CounterRng(3, 4).uniform_block(0, 3, 2.5, 2.5, out.data());
  EXPECT_EQ(out, (std::vector<double>{2.5, 2.5, 2.5}));
}

TEST(RngBlocks, integer_block_matches_including_the_rejection_path) {
  RngPathScope scope;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  // [0, 2^63] has n = 2^63 + 1 values; 2^64 mod n = 2^63 - 1, so draws >= 2^63 + 1 are rejected:
  // almost half the first draws take the retry path.
  const int64_t ranges[][2] = {{-4, 4}, {0, 1}, {-128, 127}, {kMin, kMax}, {0, kMax}, {kMin, -1}, {7, 7}};
  const CounterRng rng(42, "integers");
  for (RngPath path : supported_paths()) {
    set_rng_path(path);
    for (const auto& range : ranges) {
      const int64_t n = 3000;
      std::vector<int64_t> out(static_cast<size_t>(n));
      rng.integer_block(100, n, range[0], range[1], out.data());
      for (int64_t i = 0; i < n; ++i) {
        const uint64_t index = 100 + static_cast<uint64_t>(i);
        ASSERT_EQ(out[static_cast<size_t>(i)], rng.integer(index, range[0], range[1]))
            << rng_path_name(path) << " [" << range[0] << ", " << range[1] << "] index " << index;
      }
    }
    // The half-range case really exercised the retries.
    std::vector<int64_t> out(2000);
    rng.integer_block(0, 2000, 0, std::numeric_limits<int64_t>::max(), out.data());
    int rejected = 0;
    for (uint64_t i = 0; i < 2000; ++i) {
      const uint64_t first_draw = rng.bits(i);
      if (first_draw >= (uint64_t{1} << 63) + 1) {
        ++rejected;
        ASSERT_NE(static_cast<uint64_t>(out[i]), first_draw % ((uint64_t{1} << 63) + 1)) << "index " << i;
      }
      ASSERT_EQ(out[i], rng.integer(i, 0, std::numeric_limits<int64_t>::max()));
    }
    EXPECT_GT(rejected, 800) << rng_path_name(path);
  }
}

TEST(RngBlocks, set_rng_path_pins_the_path) {
  RngPathScope scope;
  for (RngPath path : supported_paths()) {
    set_rng_path(path);
    EXPECT_EQ(rng_path(), path);
  }
}

}  // namespace
}  // namespace opgate
