// Philox4x32-10 over runs of consecutive counters, vectorised across counters (the kernels behind
// CounterRng's *_block functions). Every path computes the same 32-bit words as philox4x32_10:
// the round function is integer multiply, xor and add only, so lane width cannot change a bit.
#pragma once

#include <cstdint>

#include "core/rng.h"

namespace opgate::philox_lanes {

// Philox4x32-10's multipliers, Weyl key increments and rounds (Salmon et al., SC'11), shared by
// the scalar philox4x32_10 and the vector paths.
constexpr uint32_t kM0 = 0xD2511F53;
constexpr uint32_t kM1 = 0xCD9E8D57;
constexpr uint32_t kW0 = 0x9E3779B9;
constexpr uint32_t kW1 = 0xBB67AE85;
constexpr int kRounds = 10;

// What each 4-word block becomes in out[i].
enum class Reduce : uint8_t {
  kLow64,   // out[i] = w0 | w1 << 32 (CounterRng::bits)
  kAddSum,  // out[i] += w0 + w1 + w2 + w3 (the Irwin-Hall terms of CounterRng::normal)
};

// For i in [0, n): the block of counter {index, stream} with index = first + i (mod 2^64) under
// the 64-bit key `key`, reduced into out[i], on instruction-set path `path` (must be supported).
void run(RngPath path, uint64_t key, uint64_t stream, uint64_t first, int64_t n, Reduce reduce, uint64_t* out);

// One path's kernel: run() on that path.
struct Kernels {
  void (*run)(uint64_t key, uint64_t stream, uint64_t first, int64_t n, Reduce reduce, uint64_t* out);
};
// The scalar formulation (the definition; the vector paths' tails).
void run_scalar(uint64_t key, uint64_t stream, uint64_t first, int64_t n, Reduce reduce, uint64_t* out);

// The vector paths' kernels, each defined in core/<arch>/philox_lanes_<isa>.cpp (only the build
// architecture's exist).
namespace paths {
extern const Kernels avx2, avx512, neon;
}  // namespace paths

// Stores of `lanes` counters' four words, reduced into out[0, lanes) (the vector paths' epilogue).
template <int lanes>
inline void reduce_words(Reduce reduce, const uint32_t (&w)[4][lanes], uint64_t* out) {
  if (reduce == Reduce::kLow64) {
    for (int j = 0; j < lanes; ++j) out[j] = static_cast<uint64_t>(w[0][j]) | (static_cast<uint64_t>(w[1][j]) << 32);
  } else {
    for (int j = 0; j < lanes; ++j) {
      out[j] += static_cast<uint64_t>(w[0][j]) + w[1][j] + w[2][j] + w[3][j];
    }
  }
}

}  // namespace opgate::philox_lanes
