// CounterRng: Philox4x32-10 keyed by the seed, counted by (index, stream), and the integer-only
// mappings from its output to uniform, integer, normal and Bernoulli draws.
//
// Layout of one draw: key = seed' (two 32-bit words, low first), counter = {index low, index high,
// stream low, stream high}. seed' = seed ^ (draw * kGolden64), where `draw` selects an extra
// independent block for the same (stream, index): draw 0 is bits(index), draws 1, 2, ... are the
// rejection retries of integer(), and draws kNormalDraw + 0..2 feed normal(). Multiplying by an odd
// constant is a bijection mod 2^64, so distinct draws get distinct keys; a retry block can only
// coincide with a primary block of another seed, and draws of different seeds are never combined.
//
// The *_block functions take their Philox words from core/philox_lanes (vectorised, integer only)
// and map them with the same functions as the scalar calls below; those double mappings stay in
// this baseline-ISA file (no -mfma, ISO mode: no contraction), so a block value is the scalar value.

#include "core/rng.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "core/philox_lanes.h"
#include "core/status.h"

namespace opgate {
namespace {

constexpr uint64_t kGolden64 = 0x9E3779B97F4A7C15;
constexpr uint64_t kNormalDraw = uint64_t{1} << 32;
constexpr int kIrwinHallTerms = 12;

constexpr double kTwoPowMinus53 = 1.0 / 9007199254740992.0;
constexpr double kTwoPowMinus33 = 1.0 / 8589934592.0;

uint64_t draw_key(uint64_t seed, uint64_t draw) { return seed ^ (draw * kGolden64); }

std::array<uint32_t, 4> block(uint64_t seed, uint64_t stream, uint64_t draw, uint64_t index) {
  const uint64_t key = draw_key(seed, draw);
  return philox4x32_10({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                        static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)},
                       {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
}

uint64_t low64(const std::array<uint32_t, 4>& words) {
  return static_cast<uint64_t>(words[0]) | (static_cast<uint64_t>(words[1]) << 32);
}

// Indices per pass of the block functions: the partial sums of normal_block stay in L1.
constexpr int64_t kBlockRun = 512;

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

// The top 53 bits scaled by 2^-53: every multiple of 2^-53 in [0, 1) equally likely, exactly.
double unit_from_bits(uint64_t b) { return static_cast<double>(b >> 11) * kTwoPowMinus53; }

// u in [0, 1) mapped to [lo, hi), lo < hi. The convex form cannot overflow for any finite bounds;
// its rounding can land on `hi` when u is close to 1, which the half-open contract excludes, or a
// hair below `lo`.
double in_range(double u, double lo, double hi) {
  const double v = lo * (1.0 - u) + hi * u;
  if (v < lo) return lo;
  return v < hi ? v : next_below(hi);
}

// Irwin-Hall: sum of 12 uniforms (w + 1/2) / 2^32 minus 6. With integer words the sum is
// (2 * sum(w) + 12) / 2^33 - 6, computed exactly: the mean is exactly 0 and the result is the
// same bits everywhere.
double normal_from_word_sum(uint64_t sum) {
  return static_cast<double>(2 * sum + kIrwinHallTerms) * kTwoPowMinus33 - 6.0;
}

// Range size of [lo, hi] modulo 2^64 (0: the full int64 range) and the 2^64 mod n values at the
// top of a 64-bit draw that integer() rejects so that every residue is equally likely.
struct IntegerRange {
  uint64_t base, n, excess;
  IntegerRange(int64_t lo, int64_t hi) {
    OPGATE_CHECK(lo <= hi, fmt::format("integer range [{}, {}] is empty", lo, hi));
    base = static_cast<uint64_t>(lo);
    n = static_cast<uint64_t>(hi) - base + 1;
    excess = n == 0 ? 0 : (uint64_t{0} - n) % n;
  }
  bool accepts(uint64_t x) const { return x <= std::numeric_limits<uint64_t>::max() - excess; }
  // 0 means the full int64 range, where every 64-bit value is fair.
  int64_t map(uint64_t x) const { return static_cast<int64_t>(n == 0 ? x : base + x % n); }
};

}  // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  for (int round = 0; round < philox_lanes::kRounds; ++round) {
    if (round > 0) {
      key[0] += philox_lanes::kW0;
      key[1] += philox_lanes::kW1;
    }
    const uint64_t p0 = static_cast<uint64_t>(philox_lanes::kM0) * ctr[0];
    const uint64_t p1 = static_cast<uint64_t>(philox_lanes::kM1) * ctr[2];
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

double CounterRng::uniform(uint64_t index) const { return unit_from_bits(bits(index)); }

double CounterRng::uniform(uint64_t index, double lo, double hi) const {
  OPGATE_CHECK(lo <= hi, fmt::format("uniform range [{}, {}) is empty", lo, hi));
  if (lo == hi) return lo;
  return in_range(uniform(index), lo, hi);
}

int64_t CounterRng::integer(uint64_t index, int64_t lo, int64_t hi) const {
  const IntegerRange range(lo, hi);
  // Rejected draws are redrawn from the next block; each attempt is rejected with probability < 1/2.
  for (uint64_t draw = 0;; ++draw) {
    const uint64_t x = low64(block(seed_, stream_, draw, index));
    if (range.accepts(x)) return range.map(x);
  }
}

double CounterRng::normal(uint64_t index) const {
  uint64_t sum = 0;
  for (int b = 0; b < kIrwinHallTerms / 4; ++b) {
    for (const uint32_t w : block(seed_, stream_, kNormalDraw + static_cast<uint64_t>(b), index)) sum += w;
  }
  return normal_from_word_sum(sum);
}

bool CounterRng::bernoulli(uint64_t index, double p) const { return uniform(index) < p; }

void CounterRng::bits_block(uint64_t first, int64_t n, uint64_t* out) const {
  philox_lanes::run(rng_path(), draw_key(seed_, 0), stream_, first, n, philox_lanes::Reduce::kLow64, out);
}

void CounterRng::uniform_block(uint64_t first, int64_t n, double* out) const {
  uint64_t b[kBlockRun];
  for (int64_t done = 0; done < n; done += kBlockRun) {
    const int64_t m = std::min(kBlockRun, n - done);
    bits_block(first + static_cast<uint64_t>(done), m, b);
    for (int64_t i = 0; i < m; ++i) out[done + i] = unit_from_bits(b[i]);
  }
}

void CounterRng::uniform_block(uint64_t first, int64_t n, double lo, double hi, double* out) const {
  OPGATE_CHECK(lo <= hi, fmt::format("uniform range [{}, {}) is empty", lo, hi));
  if (lo == hi) {
    std::fill(out, out + std::max<int64_t>(n, 0), lo);
    return;
  }
  uniform_block(first, n, out);
  for (int64_t i = 0; i < n; ++i) out[i] = in_range(out[i], lo, hi);
}

void CounterRng::integer_block(uint64_t first, int64_t n, int64_t lo, int64_t hi, int64_t* out) const {
  const IntegerRange range(lo, hi);
  uint64_t b[kBlockRun];
  for (int64_t done = 0; done < n; done += kBlockRun) {
    const int64_t m = std::min(kBlockRun, n - done);
    const uint64_t start = first + static_cast<uint64_t>(done);
    bits_block(start, m, b);
    for (int64_t i = 0; i < m; ++i) {
      // A rejected first draw takes the scalar path, which redraws from draw 1 on.
      out[done + i] = range.accepts(b[i]) ? range.map(b[i]) : integer(start + static_cast<uint64_t>(i), lo, hi);
    }
  }
}

void CounterRng::normal_block(uint64_t first, int64_t n, double* out) const {
  uint64_t sum[kBlockRun];
  for (int64_t done = 0; done < n; done += kBlockRun) {
    const int64_t m = std::min(kBlockRun, n - done);
    const uint64_t start = first + static_cast<uint64_t>(done);
    std::fill(sum, sum + m, uint64_t{0});
    for (int b = 0; b < kIrwinHallTerms / 4; ++b) {
      philox_lanes::run(rng_path(), draw_key(seed_, kNormalDraw + static_cast<uint64_t>(b)), stream_, start, m,
                        philox_lanes::Reduce::kAddSum, sum);
    }
    for (int64_t i = 0; i < m; ++i) out[done + i] = normal_from_word_sum(sum[i]);
  }
}

}  // namespace opgate
