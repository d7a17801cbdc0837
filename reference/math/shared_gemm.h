// Cache-blocked double matrix product of the references (issue 15 part 3), bit-reproducible:
// every output element is one sum in increasing k, (((0 + a0 b0) + a1 b1) + ...), each product
// rounded and then added (no FMA: the library is compiled with -ffp-contract=off and the vector
// code uses separate multiply and add), whatever the ISA path (shared_simd.h isa()) or blocking.
// Blocking only changes which elements are computed together (vectors across output columns,
// register tiles across rows) and where a partial sum waits between k blocks (in the output).
#pragma once

#include <cstdint>

#include "reference/math/shared_simd.h"

namespace opgate::math {

// c[r * ldc + j] = sum_k a[r * lda + k] * f(b[k * ldb + j]) for r < rows, j < n, the sum in
// increasing k from 0.0, with f = |.| when abs_b, else the identity. Serial: callers run it inside
// their own parallel_for over output blocks. kdim = 0 writes zeros.
void gemm(const double* a, int64_t lda, const double* b, int64_t ldb, bool abs_b, int64_t rows, int64_t kdim,
          int64_t n, double* c, int64_t ldc, Isa isa);
inline void gemm(const double* a, int64_t lda, const double* b, int64_t ldb, bool abs_b, int64_t rows, int64_t kdim,
                 int64_t n, double* c, int64_t ldc) {
  gemm(a, lda, b, ldb, abs_b, rows, kdim, n, c, ldc, isa());
}

// The same with b given as fp16 (bf16 = false) or bf16 bit patterns, taken at their exact double
// values (exact_half_values): the result is gemm's on the converted matrix, bit for bit, without
// converting it first.
void gemm_halves(const double* a, int64_t lda, const uint16_t* b, bool bf16, int64_t ldb, bool abs_b, int64_t rows,
                 int64_t kdim, int64_t n, double* c, int64_t ldc, Isa isa);
inline void gemm_halves(const double* a, int64_t lda, const uint16_t* b, bool bf16, int64_t ldb, bool abs_b,
                        int64_t rows, int64_t kdim, int64_t n, double* c, int64_t ldc) {
  gemm_halves(a, lda, b, bf16, ldb, abs_b, rows, kdim, n, c, ldc, isa());
}

// Both products of one right-hand matrix at once: c = a b and mag = w |b| (a, w: rows x kdim with
// the same lda; c, mag with the same ldc), each bit for bit gemm's (abs_b false for c, true for
// mag), b packed once for both. A null c (with a) or mag (with w) skips that product.
void gemm_with_magnitude(const double* a, const double* w, int64_t lda, const double* b, int64_t ldb, int64_t rows,
                         int64_t kdim, int64_t n, double* c, double* mag, int64_t ldc, Isa isa);
inline void gemm_with_magnitude(const double* a, const double* w, int64_t lda, const double* b, int64_t ldb,
                                int64_t rows, int64_t kdim, int64_t n, double* c, double* mag, int64_t ldc) {
  gemm_with_magnitude(a, w, lda, b, ldb, rows, kdim, n, c, mag, ldc, isa());
}
void gemm_halves_with_magnitude(const double* a, const double* w, int64_t lda, const uint16_t* b, bool bf16,
                                int64_t ldb, int64_t rows, int64_t kdim, int64_t n, double* c, double* mag,
                                int64_t ldc, Isa isa);
inline void gemm_halves_with_magnitude(const double* a, const double* w, int64_t lda, const uint16_t* b, bool bf16,
                                       int64_t ldb, int64_t rows, int64_t kdim, int64_t n, double* c, double* mag,
                                       int64_t ldc) {
  gemm_halves_with_magnitude(a, w, lda, b, bf16, ldb, rows, kdim, n, c, mag, ldc, isa());
}

}  // namespace opgate::math
