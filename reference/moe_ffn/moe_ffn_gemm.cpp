// Double matrix products of the aclnnMoeFFN reference on the shared blocked product
// (reference/math/shared_gemm.h): every output element is one sequential sum in increasing k,
// whatever the ISA path or blocking.
#include "reference/moe_ffn/moe_ffn_gemm.h"

#include <initializer_list>

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
  for (const bool abs_b : {false, true}) {
    const double* lhs = abs_b ? w : a;
    double* dst = abs_b ? mag : out;
    if (lhs == nullptr || dst == nullptr) continue;
    if (b.values != nullptr) {
      math::gemm(lhs, kdim, b.values, n, abs_b, rows, kdim, n, dst, n);
    } else {
      math::gemm_halves(lhs, kdim, b.halves, b.bf16, n, abs_b, rows, kdim, n, dst, n);
    }
  }
}

}  // namespace opgate::ref::moe_ffn
