// moe_ffn_kernels.h's GEMMs on AVX2: fp32 tile 3 x 16 (accumulators and fractal sums in 12 of the
// 16 ymm registers), int32 tile 6 x 16 (12 ymm). The target attribute is on this file's functions
// only; the templates they inline have internal linkage.
#include "device/emu/moe_ffn_kernels.h"

namespace opgate::emu::moe_ffn {
namespace {

__attribute__((target("avx2"))) void gemm_f32_avx2(const float* a, int64_t rows, int64_t kdim, const float* b,
                                                   int64_t n, const float* bias, float* out) {
  gemm_f32_blocked<F8, 3, 2>(a, rows, kdim, b, n, bias, out);
}

__attribute__((target("avx2"))) void gemm_i32_avx2(const int32_t* a, int64_t rows, int64_t lda, const PackedInts& b,
                                                   const int32_t* bias, int32_t* out) {
  gemm_i32_blocked<U8, 6, 2>(a, rows, lda, b, bias, out);
}

}  // namespace

const Kernels paths::avx2 = {gemm_f32_avx2, gemm_i32_avx2, 16};

}  // namespace opgate::emu::moe_ffn
