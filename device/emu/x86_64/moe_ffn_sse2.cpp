// moe_ffn_kernels.h's GEMMs on SSE2, x86-64's baseline (no target attribute; also the scalar
// setting's path): fp32 tile 3 x 8 (accumulators and fractal sums in 12 of the 16 xmm registers),
// int32 tile 4 x 8 (8 xmm).
#include "device/emu/moe_ffn_kernels.h"

namespace opgate::emu::moe_ffn {
namespace {

void gemm_f32_sse2(const float* a, int64_t rows, int64_t kdim, const float* b, int64_t n, const float* bias,
                   float* out) {
  gemm_f32_blocked<F4, 3, 2>(a, rows, kdim, b, n, bias, out);
}

void gemm_i32_sse2(const int32_t* a, int64_t rows, int64_t lda, const PackedInts& b, const int32_t* bias,
                   int32_t* out) {
  gemm_i32_blocked<U4, 4, 2>(a, rows, lda, b, bias, out);
}

}  // namespace

const Kernels paths::sse2 = {gemm_f32_sse2, gemm_i32_sse2, 8};

}  // namespace opgate::emu::moe_ffn
