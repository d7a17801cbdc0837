// shared_gemm.h's product on AVX2: the blocked formulation (shared_gemm_vec.h) in ymm registers, a
// 6 x 8 register tile (accumulators in 12 of the 16 ymm registers, the panel's row in 2, a's
// broadcast in 1); fp16 / bf16 panels converted 8 patterns at a time by F16C or a shift
// (halves_f16c.h). Measured on Zen 4, 1 thread, 256 x 1024 x 2816: 6 x 8 and 5 x 8 took 0.9x the
// time of the former 4 x 8; 4 x 12 spills (1.6x).
#include "reference/math/shared_gemm_vec.h"
#include "reference/math/x86_64/halves_f16c.h"

namespace opgate::math {

OPGATE_GEMM_PATH(avx2, __attribute__((target("avx2,f16c"))), V4, 6, 2, halves_to_double_f16c_tab)

}  // namespace opgate::math
