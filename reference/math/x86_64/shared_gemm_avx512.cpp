// shared_gemm.h's product on AVX-512F: the blocked formulation (shared_gemm_vec.h) in zmm
// registers, an 8 x 16 register tile (accumulators in 16 of the 32 zmm registers); fp16 / bf16
// panels converted 8 patterns at a time by F16C or a shift (halves_f16c.h).
#include "reference/math/shared_gemm_vec.h"
#include "reference/math/x86_64/halves_f16c.h"

namespace opgate::math {

OPGATE_GEMM_PATH(avx512, __attribute__((target("avx512f,avx2,f16c"))), V8, 8, 2, halves_to_double_f16c_tab)

}  // namespace opgate::math
