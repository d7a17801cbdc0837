// moe_ffn_kernels.h's GEMMs on NEON, aarch64's baseline (no target attribute; also the scalar
// setting's path), 4 lanes per q register: fp32 tile 6 x 8 (accumulators and fractal sums in 24 of
// the 32 q registers, 2 for the row of b), int32 tile 6 x 16 (24 q, 4 for b). The tile shape does
// not change a bit: each output is its own fractal-by-fractal k-order sum (moe_ffn_kernels.h), and
// -ffp-contract=off keeps the multiply and the add separate instructions (no FMLA).
#include "device/emu/moe_ffn_kernels.h"

namespace opgate::emu::moe_ffn {
namespace {

void gemm_f32_neon(const float* a, int64_t rows, int64_t kdim, const float* b, int64_t n, const float* bias,
                   float* out) {
  gemm_f32_blocked<F4, 6, 2>(a, rows, kdim, b, n, bias, out);
}

void gemm_i32_neon(const int32_t* a, int64_t rows, int64_t lda, const PackedInts& b, const int32_t* bias,
                   int32_t* out) {
  gemm_i32_blocked<U4, 6, 4>(a, rows, lda, b, bias, out);
}

}  // namespace

const Kernels paths::neon = {gemm_f32_neon, gemm_i32_neon, 16};

}  // namespace opgate::emu::moe_ffn
