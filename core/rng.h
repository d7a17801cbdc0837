// Counter-based random numbers: value = f(seed, stream, index), so the same seed gives the same
// bytes on every platform, compiler and thread count, and any element can be drawn independently.
// The mixing function is Philox4x32-10 (Salmon et al., SC'11); mappings to ranges use integer
// arithmetic and exactly-rounded IEEE operations only (no libm), so they are bit-reproducible.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/isa.h"

namespace opgate {

// Instruction-set paths the *_block functions can run Philox on: the ISA paths of core/isa.h (the
// names of OPGATE_ISA), each with a row in core/philox_lanes.cpp's table (x86-64: scalar, avx2,
// avx512; aarch64: scalar, neon). Every path gives the same bits.
using RngPath = Isa;
const char* rng_path_name(RngPath path);  // isa_name: "scalar", "avx2", "avx512", "neon", ...
// Whether the table has a row for the path and this CPU runs it.
bool rng_path_supported(RngPath path);
// The supported paths, scalar first, in table order (tests and benchmarks iterate them).
std::vector<RngPath> rng_paths();
// The path in use: the last set_rng_path, else OPGATE_ISA's path when set and supported (a
// supported narrower one when the table has no row for it, e.g. sse2 -> scalar), else the widest.
RngPath rng_path();
// Pins the block functions to `path` (tests and benchmarks compare the paths); checked supported.
void set_rng_path(RngPath path);

class CounterRng {
 public:
  CounterRng(uint64_t seed, uint64_t stream) : seed_(seed), stream_(stream) {}
  // A stream derived from a name (FNV-1a 64), so each tensor has its own stream.
  CounterRng(uint64_t seed, std::string_view stream_name);

  // 64 random bits for `index`.
  uint64_t bits(uint64_t index) const;
  // Uniform double in [0, 1) with 53 random bits.
  double uniform(uint64_t index) const;
  // Uniform double in [lo, hi).
  double uniform(uint64_t index, double lo, double hi) const;
  // Uniform integer in [lo, hi] (inclusive; unbiased by rejection on a sub-counter).
  int64_t integer(uint64_t index, int64_t lo, int64_t hi) const;
  // Approximately standard normal: Irwin-Hall sum of 12 uniforms minus 6 (support [-6, 6]).
  double normal(uint64_t index) const;
  // True with probability p.
  bool bernoulli(uint64_t index, double p) const;

  // Runs of n consecutive indices first, first + 1, ... (mod 2^64): out[i] is bit for bit the
  // scalar call at index first + i, computed several counters at a time (vectorised Philox).
  void bits_block(uint64_t first, int64_t n, uint64_t* out) const;
  void uniform_block(uint64_t first, int64_t n, double* out) const;
  void uniform_block(uint64_t first, int64_t n, double lo, double hi, double* out) const;
  void integer_block(uint64_t first, int64_t n, int64_t lo, int64_t hi, int64_t* out) const;
  void normal_block(uint64_t first, int64_t n, double* out) const;

  uint64_t seed() const { return seed_; }
  uint64_t stream() const { return stream_; }

 private:
  uint64_t seed_;
  uint64_t stream_;
};

uint64_t fnv1a64(std::string_view s);

// The raw Philox4x32-10 block function (exposed for its known-answer test).
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key);

}  // namespace opgate
