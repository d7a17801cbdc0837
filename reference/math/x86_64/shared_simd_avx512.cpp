// shared_simd.h's kernels on AVX-512F: the vector formulation, one zmm register per 8 doubles, 8 rows
// per gemm_panel8 tile (accumulators in 8 of the 32 zmm registers), the halves through F16C.
#include "reference/math/shared_simd_vec.h"
#include "reference/math/x86_64/halves_f16c.h"

namespace opgate::math {

OPGATE_SIMD_PATH(avx512, __attribute__((target("avx512f,avx2,f16c"))), halves_to_double_f16c, 8)

}  // namespace opgate::math
