// shared_simd.h's kernels on SSE2, x86-64's baseline (no target attribute): the vector formulation
// in xmm registers, 2 rows per gemm_panel8 tile (accumulators in 8 of the 16 xmm registers); the
// halves by the vector formulation (bf16 by a shift, fp16 by the table).
#include "reference/math/shared_simd_vec.h"

namespace opgate::math {

OPGATE_SIMD_PATH(sse2, , halves_to_double_vec, 2)

}  // namespace opgate::math
