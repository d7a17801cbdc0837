// The product of shared_gemm.h: the plain scalar formulation and the dispatch table over the ISA
// paths (the blocked formulation, shared_gemm_vec.h, compiled per path in reference/math/<arch>/
// shared_gemm_<isa>.cpp).
#include "reference/math/shared_gemm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "reference/math/shared_gemm_paths.h"

namespace opgate::math {
namespace {

// The plain formulation: each row's sums advance together, one k at a time (same per-element order).
template <typename T>
void gemm_scalar_one(const double* a, int64_t lda, const T* b, const double* tab, int64_t ldb, bool abs_b,
                     int64_t rows, int64_t kdim, int64_t n, double* c, int64_t ldc) {
  for (int64_t r = 0; r < rows; ++r) {
    double* cr = c + r * ldc;
    std::fill_n(cr, n, 0.0);
    for (int64_t k = 0; k < kdim; ++k) {
      const double av = a[r * lda + k];
      const T* bk = b + k * ldb;
      for (int64_t j = 0; j < n; ++j) {
        const double bv = gemm_value_of(bk[j], tab);
        cr[j] += av * (abs_b ? std::fabs(bv) : bv);
      }
    }
  }
}

template <typename T>
void gemm_scalar(const double* a, const double* w, int64_t lda, const T* b, bool /*bf16*/, const double* tab,
                 int64_t ldb, int64_t rows, int64_t kdim, int64_t n, double* c, double* mag, int64_t ldc) {
  if (c != nullptr) gemm_scalar_one(a, lda, b, tab, ldb, false, rows, kdim, n, c, ldc);
  if (mag != nullptr) gemm_scalar_one(w, lda, b, tab, ldb, true, rows, kdim, n, mag, ldc);
}

const GemmKernels kGemm_scalar = {gemm_scalar<double>, gemm_scalar<uint16_t>};

// One row per path of this architecture (OPGATE_ARCH_*: the files CMake compiles).
const IsaRow<GemmKernels> kRows[] = {
    {Isa::kScalar, &kGemm_scalar},
#if OPGATE_ARCH_X86_64
    {Isa::kSse2, &gemm_paths::sse2},
    {Isa::kAvx2, &gemm_paths::avx2},
    {Isa::kAvx512, &gemm_paths::avx512},
#elif OPGATE_ARCH_AARCH64
    {Isa::kNeon, &gemm_paths::neon},
#endif
};

const GemmKernels& gemm_kernels(Isa path) { return pick(kRows, isa_supported(path) ? path : isa()); }

}  // namespace

void gemm(const double* a, int64_t lda, const double* b, int64_t ldb, bool abs_b, int64_t rows, int64_t kdim,
          int64_t n, double* c, int64_t ldc, Isa path) {
  if (rows <= 0 || n <= 0) return;
  gemm_kernels(path).f64(a, a, lda, b, false, nullptr, ldb, rows, kdim, n,
                         abs_b ? nullptr : c, abs_b ? c : nullptr, ldc);
}

void gemm_halves(const double* a, int64_t lda, const uint16_t* b, bool bf16, int64_t ldb, bool abs_b, int64_t rows,
                 int64_t kdim, int64_t n, double* c, int64_t ldc, Isa path) {
  if (rows <= 0 || n <= 0) return;
  gemm_kernels(path).halves(a, a, lda, b, bf16, exact_half_values(bf16), ldb,
                            rows, kdim, n, abs_b ? nullptr : c, abs_b ? c : nullptr, ldc);
}

void gemm_with_magnitude(const double* a, const double* w, int64_t lda, const double* b, int64_t ldb, int64_t rows,
                         int64_t kdim, int64_t n, double* c, double* mag, int64_t ldc, Isa path) {
  if (rows <= 0 || n <= 0) return;
  gemm_kernels(path).f64(a, w, lda, b, false, nullptr, ldb, rows, kdim, n, c, mag, ldc);
}

void gemm_halves_with_magnitude(const double* a, const double* w, int64_t lda, const uint16_t* b, bool bf16,
                                int64_t ldb, int64_t rows, int64_t kdim, int64_t n, double* c, double* mag,
                                int64_t ldc, Isa path) {
  if (rows <= 0 || n <= 0) return;
  gemm_kernels(path).halves(a, w, lda, b, bf16, exact_half_values(bf16), ldb, rows, kdim, n, c, mag, ldc);
}

std::vector<Isa> gemm_isas() { return table_isas(kRows); }

}  // namespace opgate::math
