// Double matrix products of the aclnnMoeFFN reference on the shared blocked product
// (reference/math/shared_gemm.h): every output element is one sequential sum in increasing k,
// whatever the ISA path or blocking.
#include "reference/moe_ffn/moe_ffn_gemm.h"

#include "reference/math/shared_gemm.h"

namespace opgate::ref::moe_ffn {

void gemm_rows(const double* a, int64_t rows, int64_t kdim, const double* b, int64_t n, double* out,
               const double* w, double* mag) {
  math::gemm(a, kdim, b, n, false, rows, kdim, n, out, n);
  if (w != nullptr && mag != nullptr) math::gemm(w, kdim, b, n, true, rows, kdim, n, mag, n);
}

}  // namespace opgate::ref::moe_ffn
