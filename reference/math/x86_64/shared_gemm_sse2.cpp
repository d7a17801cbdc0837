// shared_gemm.h's product on SSE2, x86-64's baseline (no target attribute): the blocked
// formulation (shared_gemm_vec.h) in xmm registers, a 4 x 4 register tile (accumulators in 8 of
// the 16 xmm registers).
#include "reference/math/shared_gemm_vec.h"

namespace opgate::math {

OPGATE_GEMM_PATH(sse2, , V2, 4, 2, gemm_halves_by_table)

}  // namespace opgate::math
