// shared_gemm.h's product on NEON, aarch64's baseline (no target attribute): the blocked
// formulation (shared_gemm_vec.h) in q registers of 2 doubles, a 4 x 8 register tile (accumulators
// in 16 of the 32 q registers, the panel's 8 columns in 4 more; 6 x 8 would leave too few for the
// products and the broadcast rows of `a`). Separate FMUL and FADD (-ffp-contract=off): no FMLA.
#include "reference/math/shared_gemm_vec.h"

namespace opgate::math {

OPGATE_GEMM_PATH(neon, , V2, 4, 4)

}  // namespace opgate::math
