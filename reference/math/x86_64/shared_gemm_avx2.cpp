// shared_gemm.h's product on AVX2: the blocked formulation (shared_gemm_vec.h) in ymm registers, a
// 4 x 8 register tile (accumulators in 8 of the 16 ymm registers); fp16 / bf16 panels converted 8
// patterns at a time by F16C or a shift (halves_f16c.h).
#include "reference/math/shared_gemm_vec.h"
#include "reference/math/x86_64/halves_f16c.h"

namespace opgate::math {

OPGATE_GEMM_PATH(avx2, __attribute__((target("avx2,f16c"))), V4, 4, 2, halves_to_double_f16c_tab)

}  // namespace opgate::math
