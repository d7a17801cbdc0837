// shared_gemm.h's product on AVX2: the blocked formulation (shared_gemm_vec.h) in ymm registers, a
// 4 x 8 register tile (accumulators in 8 of the 16 ymm registers).
#include "reference/math/shared_gemm_vec.h"

namespace opgate::math {

OPGATE_GEMM_PATH(avx2, __attribute__((target("avx2"))), V4, 4, 2)

}  // namespace opgate::math
