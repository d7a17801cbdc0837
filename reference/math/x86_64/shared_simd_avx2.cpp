// shared_simd.h's kernels on AVX2 (+F16C): the vector formulation in ymm registers, 4 rows per
// gemm_panel8 tile (accumulators in 8 of the 16 ymm registers), the halves through F16C.
#include "reference/math/shared_simd_vec.h"
#include "reference/math/x86_64/halves_f16c.h"

namespace opgate::math {

OPGATE_SIMD_PATH(avx2, __attribute__((target("avx2,f16c"))), halves_to_double_f16c, 4)

}  // namespace opgate::math
