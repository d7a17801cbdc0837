// The blocked formulation of shared_gemm.h's product, included only by the ISA files
// (reference/math/<arch>/shared_gemm_<isa>.cpp), each of which compiles it into its own path with
// OPGATE_GEMM_PATH. Goto-style blocking: for each block of kKc values of k, the rows of `a` are
// packed into slivers of kMr rows (k-major, so the kernel reads them in order), and each panel of
// kNr columns of `b` into a kKc x kNr panel (L1/L2-resident while every sliver of rows streams
// past it), fp16 / bf16 rows converted by the path's row converter (exact: any converter gives the
// same doubles). With a magnitude product (mag = w |b|), |b| is derived from the packed panel and
// w's slivers stream past it too, so b is read and converted once for both. The register tile is
// kMr rows x kNr columns in vectors of the path's width; every lane is one output element's own
// sum, so the order of its operations is the scalar loop's (and any tile gives the same bits).
// Partial sums wait in `c` between k blocks (exact: a double).
// Everything has internal linkage or is always inlined, so no path's code is shared with another's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "core/vector_memory.h"
#include "reference/math/shared_gemm_paths.h"

// The vector helpers below are always inlined, so their vector arguments never cross a call.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace opgate::math {
namespace {

constexpr int64_t kKc = 256;  // k per block: a 16-column panel is 32 KiB (L1 48 KiB here)

// Vectors of the path's native width (wider generic vectors would be split through memory).
typedef double V2 __attribute__((vector_size(16)));
typedef double V4 __attribute__((vector_size(32)));
typedef double V8 __attribute__((vector_size(64)));

using vec::load;
using vec::store;

// kMr x (lanes kNv) outputs over kc values of k: acc starts at 0 (or the partial sums in c), then
// acc += b * a for each k in order. mr x nr of the tile are real (the packing padded the rest with
// zeros, whose lanes are discarded).
template <typename V, int kMr, int kNv>
OPGATE_INLINE void tile(const double* ap, const double* bp, int64_t kc, double* c, int64_t ldc, bool accumulate,
                        int64_t mr, int64_t nr) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(double);
  constexpr int64_t kNr = kLanes * kNv;
  V acc[kMr][kNv];
  const bool full = mr == kMr && nr == kNr;
  double edge[kMr * kNr];
  if (!full) {
    std::fill_n(edge, kMr * kNr, 0.0);
    for (int64_t r = 0; accumulate && r < mr; ++r) std::copy_n(c + r * ldc, nr, edge + r * kNr);
  }
  for (int r = 0; r < kMr; ++r) {
    for (int v = 0; v < kNv; ++v) {
      acc[r][v] = full ? (accumulate ? load<V>(c + r * ldc + kLanes * v) : V{}) : load<V>(edge + r * kNr + kLanes * v);
    }
  }
  for (int64_t k = 0; k < kc; ++k) {
    V bv[kNv];
    for (int v = 0; v < kNv; ++v) bv[v] = load<V>(bp + k * kNr + kLanes * v);
    for (int r = 0; r < kMr; ++r) {
      const double av = ap[k * kMr + r];
      for (int v = 0; v < kNv; ++v) acc[r][v] += bv[v] * av;  // a * b: products commute exactly
    }
  }
  if (full) {
    for (int r = 0; r < kMr; ++r) {
      for (int v = 0; v < kNv; ++v) store<V>(c + r * ldc + kLanes * v, acc[r][v]);
    }
    return;
  }
  for (int r = 0; r < kMr; ++r) {
    for (int v = 0; v < kNv; ++v) store<V>(edge + r * kNr + kLanes * v, acc[r][v]);
  }
  for (int64_t r = 0; r < mr; ++r) std::copy_n(edge + r * kNr, nr, c + r * ldc);
}

// The exact doubles of count fp16 / bf16 patterns by their table: the generic row converter of
// the halves' panels (a path with a vector conversion passes its own to OPGATE_GEMM_PATH).
OPGATE_INLINE void gemm_halves_by_table(const uint16_t* src, int64_t count, bool /*bf16*/, const double* tab,
                                        double* dst) {
  for (int64_t j = 0; j < count; ++j) dst[j] = tab[src[j]];
}

using GemmRowConverter = void (*)(const uint16_t* src, int64_t count, bool bf16, const double* tab, double* dst);

// Rows [0, rows) of `src` (leading dimension lda), k in [pc, pc + kc), as slivers of kMr rows,
// k-major; rows past the end are zeros.
template <int kMr>
OPGATE_INLINE void pack_slivers(const double* src, int64_t lda, int64_t rows, int64_t pc, int64_t kc, double* out) {
  const int64_t slivers = (rows + kMr - 1) / kMr;
  for (int64_t s = 0; s < slivers; ++s) {
    double* dst = out + s * kMr * kc;
    for (int64_t r = 0; r < kMr; ++r) {
      const int64_t row = s * kMr + r;
      if (row >= rows) {
        for (int64_t k = 0; k < kc; ++k) dst[k * kMr + r] = 0.0;
        continue;
      }
      const double* from = src + row * lda + pc;
      for (int64_t k = 0; k < kc; ++k) dst[k * kMr + r] = from[k];
    }
  }
}

// GemmKernels' product (shared_gemm_paths.h): c = a b when c is given, mag = w |b| when mag is; each
// panel of b is converted and packed once, |b| derived from the packed panel (the sign bit cleared).
template <typename V, int kMr, int kNv, GemmRowConverter kCvt, typename T>
OPGATE_INLINE void gemm_blocked(const double* a, const double* w, int64_t lda, const T* b, bool bf16,
                                const double* tab, int64_t ldb, int64_t rows, int64_t kdim, int64_t n, double* c,
                                double* mag, int64_t ldc) {
  constexpr int64_t kNr = static_cast<int64_t>(sizeof(V) / sizeof(double)) * kNv;
  if (kdim == 0) {
    for (double* out : {c, mag}) {
      for (int64_t r = 0; out != nullptr && r < rows; ++r) std::fill_n(out + r * ldc, n, 0.0);
    }
    return;
  }
  // Per-thread scratch: reused across calls, so the pages are touched once.
  static thread_local std::vector<double> apack, wpack, bpack, mpack;
  const int64_t slivers = (rows + kMr - 1) / kMr;
  const auto sliver_size = static_cast<size_t>(slivers * kMr * std::min(kKc, kdim));
  if (c != nullptr) apack.resize(sliver_size);
  if (mag != nullptr) wpack.resize(sliver_size);
  bpack.resize(static_cast<size_t>(kKc * kNr));
  if (c != nullptr && mag != nullptr) mpack.resize(static_cast<size_t>(kKc * kNr));
  for (int64_t pc = 0; pc < kdim; pc += kKc) {
    const int64_t kc = std::min(kKc, kdim - pc);
    if (c != nullptr) pack_slivers<kMr>(a, lda, rows, pc, kc, apack.data());
    if (mag != nullptr) pack_slivers<kMr>(w, lda, rows, pc, kc, wpack.data());
    for (int64_t jr = 0; jr < n; jr += kNr) {
      const int64_t nr = std::min(kNr, n - jr);
      for (int64_t k = 0; k < kc; ++k) {
        const T* src = b + (pc + k) * ldb + jr;
        double* dst = bpack.data() + k * kNr;
        if constexpr (std::is_same_v<T, double>) {
          (void)bf16;
          (void)tab;
          std::copy_n(src, nr, dst);
        } else {
          kCvt(src, nr, bf16, tab, dst);
        }
        for (int64_t j = nr; j < kNr; ++j) dst[j] = 0.0;
      }
      double* magnitudes = bpack.data();
      if (mag != nullptr) {
        if (c != nullptr) magnitudes = mpack.data();
        for (int64_t i = 0; i < kc * kNr; ++i) magnitudes[i] = std::fabs(bpack[static_cast<size_t>(i)]);
      }
      for (int64_t s = 0; c != nullptr && s < slivers; ++s) {
        tile<V, kMr, kNv>(apack.data() + s * kMr * kc, bpack.data(), kc, c + s * kMr * ldc + jr, ldc, pc > 0,
                          std::min<int64_t>(kMr, rows - s * kMr), nr);
      }
      for (int64_t s = 0; mag != nullptr && s < slivers; ++s) {
        tile<V, kMr, kNv>(wpack.data() + s * kMr * kc, magnitudes, kc, mag + s * kMr * ldc + jr, ldc, pc > 0,
                          std::min<int64_t>(kMr, rows - s * kMr), nr);
      }
    }
  }
}

}  // namespace
}  // namespace opgate::math

// Defines one path's kernels and its table gemm_paths::<suffix>: `attr` is the path's target
// attribute (empty for a baseline ISA), V its vector type, kMr x kNv (vectors) its register tile,
// cvt its GemmRowConverter of fp16 / bf16 rows (gemm_halves_by_table without a vector conversion).
// Expanded inside namespace opgate::math.
#define OPGATE_GEMM_PATH(suffix, attr, V, kMr, kNv, cvt)                                                             \
  namespace {                                                                                                        \
  attr void gemm_f64_##suffix(const double* a, const double* w, int64_t lda, const double* b, bool bf16,             \
                              const double* tab, int64_t ldb, int64_t rows, int64_t kdim, int64_t n, double* c,      \
                              double* mag, int64_t ldc) {                                                            \
    gemm_blocked<V, kMr, kNv, cvt>(a, w, lda, b, bf16, tab, ldb, rows, kdim, n, c, mag, ldc);                        \
  }                                                                                                                  \
  attr void gemm_halves_##suffix(const double* a, const double* w, int64_t lda, const uint16_t* b, bool bf16,        \
                                 const double* tab, int64_t ldb, int64_t rows, int64_t kdim, int64_t n, double* c,   \
                                 double* mag, int64_t ldc) {                                                         \
    gemm_blocked<V, kMr, kNv, cvt>(a, w, lda, b, bf16, tab, ldb, rows, kdim, n, c, mag, ldc);                        \
  }                                                                                                                  \
  }                                                                                                                  \
  const GemmKernels gemm_paths::suffix = {gemm_f64_##suffix, gemm_halves_##suffix};
