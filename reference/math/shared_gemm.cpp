// The blocked product of shared_gemm.h. Goto-style blocking: for each block of kKc values of k,
// the rows of `a` are packed into slivers of kMr rows (k-major, so the kernel reads them in
// order), and each panel of kNr columns of `b` into a kKc x kNr panel (L1-resident while every
// sliver of rows streams past it from L2). The register tile is kMr rows x kNr columns in
// vectors of the path's width; every lane is one output element's own sum, so the order of its
// operations is the scalar loop's. Partial sums wait in `c` between k blocks (exact: a double).
#include "reference/math/shared_gemm.h"
#include "core/vector_memory.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

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

// An element of b as a double: itself, or the exact value of an fp16 / bf16 pattern from `tab`.
template <typename T>
OPGATE_INLINE double value_of(T v, const double* tab) {
  if constexpr (std::is_same_v<T, double>) {
    (void)tab;
    return v;
  } else {
    return tab[v];
  }
}

// The plain formulation: each row's sums advance together, one k at a time (same per-element order).
template <typename T>
void gemm_scalar(const double* a, int64_t lda, const T* b, const double* tab, int64_t ldb, bool abs_b, int64_t rows,
                 int64_t kdim, int64_t n, double* c, int64_t ldc) {
  for (int64_t r = 0; r < rows; ++r) {
    double* cr = c + r * ldc;
    std::fill_n(cr, n, 0.0);
    for (int64_t k = 0; k < kdim; ++k) {
      const double av = a[r * lda + k];
      const T* bk = b + k * ldb;
      for (int64_t j = 0; j < n; ++j) {
        const double bv = value_of(bk[j], tab);
        cr[j] += av * (abs_b ? std::fabs(bv) : bv);
      }
    }
  }
}

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

template <typename V, int kMr, int kNv, typename T>
OPGATE_INLINE void gemm_blocked(const double* a, int64_t lda, const T* b, const double* tab, int64_t ldb, bool abs_b,
                                int64_t rows, int64_t kdim, int64_t n, double* c, int64_t ldc) {
  constexpr int64_t kNr = static_cast<int64_t>(sizeof(V) / sizeof(double)) * kNv;
  if (kdim == 0) {
    for (int64_t r = 0; r < rows; ++r) std::fill_n(c + r * ldc, n, 0.0);
    return;
  }
  // Per-thread scratch: reused across calls, so the pages are touched once.
  static thread_local std::vector<double> apack, bpack;
  const int64_t slivers = (rows + kMr - 1) / kMr;
  apack.resize(static_cast<size_t>(slivers * kMr * std::min(kKc, kdim)));
  bpack.resize(static_cast<size_t>(kKc * kNr));
  for (int64_t pc = 0; pc < kdim; pc += kKc) {
    const int64_t kc = std::min(kKc, kdim - pc);
    for (int64_t s = 0; s < slivers; ++s) {
      double* dst = apack.data() + s * kMr * kc;
      for (int64_t r = 0; r < kMr; ++r) {
        const int64_t row = s * kMr + r;
        if (row >= rows) {
          for (int64_t k = 0; k < kc; ++k) dst[k * kMr + r] = 0.0;
          continue;
        }
        const double* src = a + row * lda + pc;
        for (int64_t k = 0; k < kc; ++k) dst[k * kMr + r] = src[k];
      }
    }
    for (int64_t jr = 0; jr < n; jr += kNr) {
      const int64_t nr = std::min(kNr, n - jr);
      for (int64_t k = 0; k < kc; ++k) {
        const T* src = b + (pc + k) * ldb + jr;
        double* dst = bpack.data() + k * kNr;
        for (int64_t j = 0; j < nr; ++j) {
          const double v = value_of(src[j], tab);
          dst[j] = abs_b ? std::fabs(v) : v;
        }
        for (int64_t j = nr; j < kNr; ++j) dst[j] = 0.0;
      }
      for (int64_t s = 0; s < slivers; ++s) {
        tile<V, kMr, kNv>(apack.data() + s * kMr * kc, bpack.data(), kc, c + s * kMr * ldc + jr, ldc, pc > 0,
                       std::min<int64_t>(kMr, rows - s * kMr), nr);
      }
    }
  }
}

// Register tiles: SSE2 (16 xmm) 4 rows x 4 columns, AVX2 (16 ymm) 4 x 8, AVX-512 (32 zmm) 8 x 16:
// 8, 8 and 16 registers of accumulators.
#define OPGATE_GEMM_PATHS(T)                                                                                      \
  void gemm_sse2(const double* a, int64_t lda, const T* b, const double* tab, int64_t ldb, bool abs_b,          \
                 int64_t rows, int64_t kdim, int64_t n, double* c, int64_t ldc) {                                \
    gemm_blocked<V2, 4, 2>(a, lda, b, tab, ldb, abs_b, rows, kdim, n, c, ldc);                                      \
  }                                                                                                               \
  __attribute__((target("avx2"))) void gemm_avx2(const double* a, int64_t lda, const T* b, const double* tab,  \
                                                 int64_t ldb, bool abs_b, int64_t rows, int64_t kdim, int64_t n,  \
                                                 double* c, int64_t ldc) {                                        \
    gemm_blocked<V4, 4, 2>(a, lda, b, tab, ldb, abs_b, rows, kdim, n, c, ldc);                                      \
  }                                                                                                               \
  __attribute__((target("avx512f,avx2"))) void gemm_avx512(const double* a, int64_t lda, const T* b,           \
                                                           const double* tab, int64_t ldb, bool abs_b,           \
                                                           int64_t rows, int64_t kdim, int64_t n, double* c,     \
                                                           int64_t ldc) {                                         \
    gemm_blocked<V8, 8, 2>(a, lda, b, tab, ldb, abs_b, rows, kdim, n, c, ldc);                                      \
  }

OPGATE_GEMM_PATHS(double)
OPGATE_GEMM_PATHS(uint16_t)

template <typename T>
void dispatch(const double* a, int64_t lda, const T* b, const double* tab, int64_t ldb, bool abs_b, int64_t rows,
              int64_t kdim, int64_t n, double* c, int64_t ldc, Isa path) {
  if (rows <= 0 || n <= 0) return;
  switch (isa_supported(path) ? path : isa()) {
    case Isa::kNeon:  // not this architecture's (isa_supported above)
    case Isa::kScalar: return gemm_scalar(a, lda, b, tab, ldb, abs_b, rows, kdim, n, c, ldc);
    case Isa::kSse2: return gemm_sse2(a, lda, b, tab, ldb, abs_b, rows, kdim, n, c, ldc);
    case Isa::kAvx2: return gemm_avx2(a, lda, b, tab, ldb, abs_b, rows, kdim, n, c, ldc);
    case Isa::kAvx512: return gemm_avx512(a, lda, b, tab, ldb, abs_b, rows, kdim, n, c, ldc);
  }
}

}  // namespace

void gemm(const double* a, int64_t lda, const double* b, int64_t ldb, bool abs_b, int64_t rows, int64_t kdim,
          int64_t n, double* c, int64_t ldc, Isa path) {
  dispatch(a, lda, b, nullptr, ldb, abs_b, rows, kdim, n, c, ldc, path);
}

void gemm_halves(const double* a, int64_t lda, const uint16_t* b, bool bf16, int64_t ldb, bool abs_b, int64_t rows,
                 int64_t kdim, int64_t n, double* c, int64_t ldc, Isa path) {
  dispatch(a, lda, b, exact_half_values(bf16), ldb, abs_b, rows, kdim, n, c, ldc, path);
}

}  // namespace opgate::math
