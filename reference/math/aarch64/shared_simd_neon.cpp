// shared_simd.h's kernels on NEON, aarch64's baseline (no target attribute): the vector formulation,
// 4 q registers per 8 doubles, 4 rows per gemm_panel8 tile (accumulators in 16 of the 32 q
// registers), the halves by FCVTL (halves_neon.h).
#include "reference/math/aarch64/halves_neon.h"
#include "reference/math/shared_simd_vec.h"

namespace opgate::math {

OPGATE_SIMD_PATH(neon, , halves_to_double_fcvtl, 4)

}  // namespace opgate::math
