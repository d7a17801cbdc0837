// shared_gemm.h's product on AVX-512F: the blocked formulation (shared_gemm_vec.h) in zmm
// registers, a 4 x 32 register tile (accumulators in 16 of the 32 zmm registers, the panel's row in
// 4: one broadcast of a feeds 4 products); fp16 / bf16 panels converted 8 patterns at a time by
// F16C or a shift (halves_f16c.h). Measured on Zen 4 (double-pumped 512-bit units), 1 thread,
// 256 x 1024 x 2816: 4 x 32 took 0.84x the time of the former 8 x 16 (4 x 48, 6 x 32, 8 x 24 alike
// within noise, 6 x 16 and 3 x 32 no better than 8 x 16).
#include "reference/math/shared_gemm_vec.h"
#include "reference/math/x86_64/halves_f16c.h"

namespace opgate::math {

OPGATE_GEMM_PATH(avx512, __attribute__((target("avx512f,avx2,f16c"))), V8, 4, 4, halves_to_double_f16c_tab)

}  // namespace opgate::math
