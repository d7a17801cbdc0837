// CounterRng: Philox4x32-10 keyed by the seed, counted by (index, stream), and the integer-only
// mappings from its output to uniform, integer, normal and Bernoulli draws.
//
// Layout of one draw: key = seed' (two 32-bit words, low first), counter = {index low, index high,
// stream low, stream high}. seed' = seed ^ (draw * kGolden64), where `draw` selects an extra
// independent block for the same (stream, index): draw 0 is bits(index), draws 1, 2, ... are the
// rejection retries of integer(), and draws kNormalDraw + 0..2 feed normal(). Multiplying by an odd
// constant is a bijection mod 2^64, so distinct draws get distinct keys; a retry block can only
// coincide with a primary block of another seed, and draws of different seeds are never combined.

#include "core/rng.h"

#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "core/status.h"

namespace opgate {
namespace {

constexpr uint32_t kPhiloxM0 = 0xD2511F53;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9;
constexpr uint32_t kPhiloxW1 = 0xBB67AE85;

constexpr uint64_t kGolden64 = 0x9E3779B97F4A7C15;
constexpr uint64_t kNormalDraw = uint64_t{1} << 32;
constexpr int kIrwinHallTerms = 12;

constexpr double kTwoPowMinus53 = 1.0 / 9007199254740992.0;
constexpr double kTwoPowMinus33 = 1.0 / 8589934592.0;

std::array<uint32_t, 4> block(uint64_t seed, uint64_t stream, uint64_t draw, uint64_t index) {
  const uint64_t key = seed ^ (draw * kGolden64);
  return philox4x32_10({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                        static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)},
                       {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
}

uint64_t low64(const std::array<uint32_t, 4>& words) {
  return static_cast<uint64_t>(words[0]) | (static_cast<uint64_t>(words[1]) << 32);
}

// The largest double below `x` (x finite and > -DBL_MAX), by stepping the bit pattern.
double next_below(double x) {
  if (x == 0.0) return -4.9406564584124654e-324;
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  b = x > 0.0 ? b - 1 : b + 1;
  double out;
  std::memcpy(&out, &b, sizeof out);
  return out;
}

}  // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kPhiloxW0;
      key[1] += kPhiloxW1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kPhiloxM0) * ctr[0];
    const uint64_t p1 = static_cast<uint64_t>(kPhiloxM1) * ctr[2];
    const auto hi0 = static_cast<uint32_t>(p0 >> 32);
    const auto lo0 = static_cast<uint32_t>(p0);
    const auto hi1 = static_cast<uint32_t>(p1 >> 32);
    const auto lo1 = static_cast<uint32_t>(p1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
  }
  return ctr;
}

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3;
  }
  return h;
}

CounterRng::CounterRng(uint64_t seed, std::string_view stream_name)
    : seed_(seed), stream_(fnv1a64(stream_name)) {}

uint64_t CounterRng::bits(uint64_t index) const { return low64(block(seed_, stream_, 0, index)); }

double CounterRng::uniform(uint64_t index) const {
  // The top 53 bits scaled by 2^-53: every multiple of 2^-53 in [0, 1) equally likely, exactly.
  return static_cast<double>(bits(index) >> 11) * kTwoPowMinus53;
}

double CounterRng::uniform(uint64_t index, double lo, double hi) const {
  OPGATE_CHECK(lo <= hi, fmt::format("uniform range [{}, {}) is empty", lo, hi));
  if (lo == hi) return lo;
  const double u = uniform(index);
  // The convex form cannot overflow for any finite bounds; its rounding can land on `hi` when u is
  // close to 1, which the half-open contract excludes, or a hair below `lo`.
  const double v = lo * (1.0 - u) + hi * u;
  if (v < lo) return lo;
  return v < hi ? v : next_below(hi);
}

int64_t CounterRng::integer(uint64_t index, int64_t lo, int64_t hi) const {
  OPGATE_CHECK(lo <= hi, fmt::format("integer range [{}, {}] is empty", lo, hi));
  // Range size modulo 2^64; 0 means the full int64 range, where every 64-bit value is fair.
  const uint64_t n = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
  const uint64_t base = static_cast<uint64_t>(lo);
  if (n == 0) return static_cast<int64_t>(bits(index));
  // 2^64 mod n values at the top would make the low residues more likely; they are rejected and
  // redrawn from the next block. Each attempt is rejected with probability < 1/2.
  const uint64_t excess = (uint64_t{0} - n) % n;
  for (uint64_t draw = 0;; ++draw) {
    const uint64_t x = low64(block(seed_, stream_, draw, index));
    if (x <= std::numeric_limits<uint64_t>::max() - excess) {
      return static_cast<int64_t>(base + x % n);
    }
  }
}

double CounterRng::normal(uint64_t index) const {
  // Irwin-Hall: sum of 12 uniforms (w + 1/2) / 2^32 minus 6. With integer words the sum is
  // (2 * sum(w) + 12) / 2^33 - 6, computed exactly: the mean is exactly 0 and the result is the
  // same bits everywhere.
  uint64_t sum = 0;
  for (int b = 0; b < kIrwinHallTerms / 4; ++b) {
    for (const uint32_t w : block(seed_, stream_, kNormalDraw + static_cast<uint64_t>(b), index)) sum += w;
  }
  return static_cast<double>(2 * sum + kIrwinHallTerms) * kTwoPowMinus33 - 6.0;
}

bool CounterRng::bernoulli(uint64_t index, double p) const { return uniform(index) < p; }

}  // namespace opgate
