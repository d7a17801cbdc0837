// The MoeFFN emulator's GEMMs as generic vector templates (GCC vector extensions), included only by
// the ISA files device/emu/<arch>/moe_ffn_<isa>.cpp, each of which instantiates them at its
// native vector width and register tile and exports one table row (moe_ffn.cpp dispatches).
// Everything here has internal linkage and is always inlined, so no path's code is shared with
// another path's (a COMDAT copy compiled for AVX2 could otherwise serve a baseline caller).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/vector_memory.h"
#include "device/emu/moe_ffn.h"

// The vector helpers are always inlined, so their vector arguments never cross a call.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace opgate::emu::moe_ffn {

// One path's GEMMs (gemm_f32 and gemm_i32 of moe_ffn.h) and the panel width its gemm_i32 packs
// for (the int tile's columns).
struct Kernels {
  void (*gemm_f32)(const float* a, int64_t rows, int64_t kdim, const float* b, int64_t n, const float* bias,
                   float* out);
  void (*gemm_i32)(const int32_t* a, int64_t rows, int64_t lda, const PackedInts& b, const int32_t* bias,
                   int32_t* out);
  int64_t int_panel;
};

// The paths' rows, each defined in its ISA file (only the build architecture's exist).
namespace paths {
extern const Kernels sse2, avx2, avx512, neon;
}  // namespace paths

namespace {

constexpr int64_t kFractal = 16;  // cube K depth of one fractal (ASSUMPTION, spec §1.4.7)

// out[r][j] = fp32 sum of bias[j] and sum_k a[r][k] b[k][j]: a sequential fp32 sum inside each
// 16-deep fractal, each fractal sum then added to the accumulator. Vectorised across output
// columns (each lane one element's own sums, multiply and add separate: the device library has no
// FP contraction), blocked like reference/math/shared_gemm:
// rows packed in slivers of kMr, kKcF x kNr panels of b, the accumulators in registers across
// the fractals of a k block (kKcF is a multiple of the fractal, so blocks start on fractals).
// So each output's bits depend only on its own k-order sum, not on the tile shape or width.
// Vectors of the path's native width (wider generic vectors would be split through memory).
typedef float F4 __attribute__((vector_size(16)));
typedef float F8 __attribute__((vector_size(32)));
typedef float F16 __attribute__((vector_size(64)));
constexpr int64_t kKcF = 256;
static_assert(kKcF % kFractal == 0, "k blocks start on fractals");

using vec::load;
using vec::store;

template <typename V, int kMr, int kNv>
OPGATE_INLINE void tile_f32(const float* ap, const float* bp, int64_t kc, float* c, int64_t ldc, int64_t mr,
                            int64_t nr) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  constexpr int64_t kNr = kLanes * kNv;
  float edge[kMr * kNr] = {};
  const bool full = mr == kMr && nr == kNr;
  float* dst = full ? c : edge;
  const int64_t ld = full ? ldc : kNr;
  for (int64_t r = 0; !full && r < mr; ++r) std::copy_n(c + r * ldc, nr, edge + r * kNr);
  V acc[kMr][kNv];
  for (int r = 0; r < kMr; ++r) {
    for (int v = 0; v < kNv; ++v) acc[r][v] = load<V>(dst + r * ld + kLanes * v);
  }
  for (int64_t f0 = 0; f0 < kc; f0 += kFractal) {
    V part[kMr][kNv] = {};
    for (int64_t k = f0; k < std::min(kc, f0 + kFractal); ++k) {
      V bv[kNv];
      for (int v = 0; v < kNv; ++v) bv[v] = load<V>(bp + k * kNr + kLanes * v);
      for (int r = 0; r < kMr; ++r) {
        const float av = ap[k * kMr + r];
        for (int v = 0; v < kNv; ++v) part[r][v] += bv[v] * av;
      }
    }
    for (int r = 0; r < kMr; ++r) {
      for (int v = 0; v < kNv; ++v) acc[r][v] += part[r][v];
    }
  }
  for (int r = 0; r < kMr; ++r) {
    for (int v = 0; v < kNv; ++v) store<V>(dst + r * ld + kLanes * v, acc[r][v]);
  }
  for (int64_t r = 0; !full && r < mr; ++r) std::copy_n(edge + r * kNr, nr, c + r * ldc);
}

template <typename V, int kMr, int kNv>
OPGATE_INLINE void gemm_f32_blocked(const float* a, int64_t rows, int64_t kdim, const float* b, int64_t n,
                                    const float* bias, float* out) {
  constexpr int64_t kNr = static_cast<int64_t>(sizeof(V) / sizeof(float)) * kNv;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) out[r * n + j] = bias ? bias[j] : 0.0f;
  }
  static thread_local std::vector<float> apack, bpack;
  const int64_t slivers = (rows + kMr - 1) / kMr;
  apack.resize(static_cast<size_t>(slivers * kMr * std::min(kKcF, kdim)));
  bpack.resize(static_cast<size_t>(kKcF * kNr));
  for (int64_t pc = 0; pc < kdim; pc += kKcF) {
    const int64_t kc = std::min(kKcF, kdim - pc);
    for (int64_t s = 0; s < slivers; ++s) {
      float* dst = apack.data() + s * kMr * kc;
      for (int64_t r = 0; r < kMr; ++r) {
        const int64_t row = s * kMr + r;
        for (int64_t k = 0; k < kc; ++k) dst[k * kMr + r] = row < rows ? a[row * kdim + pc + k] : 0.0f;
      }
    }
    for (int64_t jr = 0; jr < n; jr += kNr) {
      const int64_t nr = std::min(kNr, n - jr);
      for (int64_t k = 0; k < kc; ++k) {
        float* dst = bpack.data() + k * kNr;
        std::copy_n(b + (pc + k) * n + jr, nr, dst);
        std::fill(dst + nr, dst + kNr, 0.0f);
      }
      for (int64_t s = 0; s < slivers; ++s) {
        tile_f32<V, kMr, kNv>(apack.data() + s * kMr * kc, bpack.data(), kc, out + s * kMr * n + jr, n,
                           std::min<int64_t>(kMr, rows - s * kMr), nr);
      }
    }
  }
}

// int32 cube accumulation of the int8 path: out = bias + a b in int32 sums that wrap like the
// hardware (mod 2^32; check_data keeps valid cases in range). Sums mod 2^32 are associative and
// commutative, so no blocking, vector width or order can change a bit: uint32 lanes across output
// columns (vpmulld / vpaddd, NEON mul / mla; unsigned, so the wrap-around is defined), b packed once per expert
// into column panels of the path's tile width, the accumulators in registers across a k block.
typedef uint32_t U4 __attribute__((vector_size(16)));
typedef uint32_t U8 __attribute__((vector_size(32)));
typedef uint32_t U16 __attribute__((vector_size(64)));
constexpr int64_t kKcI = 256;

// c[r][j] += sum_{k < kc} a[r * lda + k] * bp[k * kNr + j] for r < mr, j < nr. Rows past mr read
// row mr - 1 again (their sums land in the discarded part of the edge tile).
template <typename V, int kMr, int kNv>
OPGATE_INLINE void tile_i32(const int32_t* a, int64_t lda, int64_t mr, const uint32_t* bp, int64_t kc, uint32_t* c,
                            int64_t ldc, int64_t nr) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(uint32_t);
  constexpr int64_t kNr = kLanes * kNv;
  uint32_t edge[kMr * kNr] = {};
  const bool full = mr == kMr && nr == kNr;
  uint32_t* dst = full ? c : edge;
  const int64_t ld = full ? ldc : kNr;
  for (int64_t r = 0; !full && r < mr; ++r) std::copy_n(c + r * ldc, nr, edge + r * kNr);
  const int32_t* row[kMr];
  for (int r = 0; r < kMr; ++r) row[r] = a + std::min<int64_t>(r, mr - 1) * lda;
  V acc[kMr][kNv];
  for (int r = 0; r < kMr; ++r) {
    for (int v = 0; v < kNv; ++v) acc[r][v] = load<V>(dst + r * ld + kLanes * v);
  }
  for (int64_t k = 0; k < kc; ++k) {
    V bv[kNv];
    for (int v = 0; v < kNv; ++v) bv[v] = load<V>(bp + k * kNr + kLanes * v);
    for (int r = 0; r < kMr; ++r) {
      const auto av = static_cast<uint32_t>(row[r][k]);
      for (int v = 0; v < kNv; ++v) acc[r][v] += bv[v] * av;
    }
  }
  for (int r = 0; r < kMr; ++r) {
    for (int v = 0; v < kNv; ++v) store<V>(dst + r * ld + kLanes * v, acc[r][v]);
  }
  for (int64_t r = 0; !full && r < mr; ++r) std::copy_n(edge + r * kNr, nr, c + r * ldc);
}

template <typename V, int kMr, int kNv>
OPGATE_INLINE void gemm_i32_blocked(const int32_t* a, int64_t rows, int64_t lda, const PackedInts& b,
                                    const int32_t* bias, int32_t* out) {
  constexpr int64_t kNr = static_cast<int64_t>(sizeof(V) / sizeof(uint32_t)) * kNv;
  const int64_t n = b.n;
  auto* c = reinterpret_cast<uint32_t*>(out);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) c[r * n + j] = bias ? static_cast<uint32_t>(bias[j]) : 0u;
  }
  for (int64_t pc = 0; pc < b.kdim; pc += kKcI) {
    const int64_t kc = std::min(kKcI, b.kdim - pc);
    for (int64_t jr = 0; jr < n; jr += kNr) {
      const uint32_t* bp = b.data.data() + jr * b.kdim + pc * kNr;  // panel jr / kNr, row pc
      for (int64_t s = 0; s < rows; s += kMr) {
        tile_i32<V, kMr, kNv>(a + s * lda + pc, lda, std::min<int64_t>(kMr, rows - s), bp, kc, c + s * n + jr, n,
                              std::min(kNr, n - jr));
      }
    }
  }
}

}  // namespace
}  // namespace opgate::emu::moe_ffn
