// shared_gemm.h's product on NEON, aarch64's baseline (no target attribute): the blocked
// formulation (shared_gemm_vec.h) in q registers of 2 doubles, a 4 x 8 register tile: 16 of the 32
// q registers hold accumulators, 4 the panel's row. (GCC 12 keeps it in registers but one; a 6 x 8
// tile spills 11 q registers per k step.) Separate FMUL and FADD (-ffp-contract=off): no FMLA.
// fp16 / bf16 panels converted 8 patterns at a time by FCVTL or a shift (halves_neon.h).
#include "reference/math/shared_gemm_vec.h"
#include "reference/math/aarch64/halves_neon.h"

namespace opgate::math {

OPGATE_GEMM_PATH(neon, , V2, 4, 4, halves_to_double_fcvtl_tab)

}  // namespace opgate::math
