// shared_gemm.h's product on AVX-512F: the blocked formulation (shared_gemm_vec.h) in zmm
// registers, an 8 x 16 register tile (accumulators in 16 of the 32 zmm registers).
#include "reference/math/shared_gemm_vec.h"

namespace opgate::math {

OPGATE_GEMM_PATH(avx512, __attribute__((target("avx512f,avx2"))), V8, 8, 2)

}  // namespace opgate::math
