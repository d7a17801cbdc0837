// The dispatch table of shared_gemm.h's product (internal to reference/math and its tests): one
// kernel pair per ISA path, the scalar formulation in shared_gemm.cpp, the vector paths in
// reference/math/<arch>/shared_gemm_<isa>.cpp (the blocked formulation, shared_gemm_vec.h).
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/isa.h"
#include "core/vector_memory.h"

namespace opgate::math {

// For rows > 0 and n > 0: c[r * ldc + j] = sum_k a[r * lda + k] * b[k * ldb + j] when c is given,
// and mag[r * ldc + j] = sum_k w[r * lda + k] * |b[k * ldb + j]| when mag is given (shared_gemm.h's
// gemm and gemm_with_magnitude), one packed panel of b feeding both. b as doubles or as fp16 /
// bf16 patterns (bf16: which) whose exact values are tab[pattern].
struct GemmKernels {
  void (*f64)(const double* a, const double* w, int64_t lda, const double* b, bool bf16, const double* tab,
              int64_t ldb, int64_t rows, int64_t kdim, int64_t n, double* c, double* mag, int64_t ldc);
  void (*halves)(const double* a, const double* w, int64_t lda, const uint16_t* b, bool bf16, const double* tab,
                 int64_t ldb, int64_t rows, int64_t kdim, int64_t n, double* c, double* mag, int64_t ldc);
};

// An element of b as a double: itself, or the exact value of an fp16 / bf16 pattern from `tab`.
template <typename T>
OPGATE_INLINE double gemm_value_of(T v, const double* tab) {
  if constexpr (std::is_same_v<T, double>) {
    (void)tab;
    return v;
  } else {
    return tab[v];
  }
}

// The paths this build and CPU run the product on, scalar first (tests iterate them).
std::vector<Isa> gemm_isas();

// The vector paths' tables (only the build architecture's exist).
namespace gemm_paths {
extern const GemmKernels sse2, avx2, avx512, neon;
}  // namespace gemm_paths

}  // namespace opgate::math
