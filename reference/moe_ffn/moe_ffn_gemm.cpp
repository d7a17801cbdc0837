// Double matrix products of the aclnnMoeFFN reference on the shared blocked product
// (reference/math/shared_gemm.h): every output element is one sequential sum in increasing k,
// whatever the ISA path or blocking.
#include "reference/moe_ffn/moe_ffn_gemm.h"

#include "reference/math/shared_gemm.h"
#include "reference/math/shared_simd.h"

namespace opgate::ref::moe_ffn {

const double* Matrix::row(int64_t first, int64_t len, double* buf) const {
  if (values != nullptr) return values + first;
  math::kernels().halves_to_double(halves + first, len, bf16, buf);
  return buf;
}

void gemm_rows(const double* a, int64_t rows, int64_t kdim, const Matrix& b, int64_t n, double* out,
               const double* w, double* mag) {
  // Both products from one packed panel of b (each bit for bit the single product's).
  if (w == nullptr) mag = nullptr;
  if (b.values != nullptr) {
    math::gemm_with_magnitude(a, w, kdim, b.values, n, rows, kdim, n, out, mag, n);
  } else {
    math::gemm_halves_with_magnitude(a, w, kdim, b.halves, b.bf16, n, rows, kdim, n, out, mag, n);
  }
}

}  // namespace opgate::ref::moe_ffn
