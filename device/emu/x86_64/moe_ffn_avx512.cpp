// moe_ffn_kernels.h's GEMMs on AVX-512F: fp32 tile 6 x 32 (accumulators and fractal sums in 24 of
// the 32 zmm registers), int32 tile 6 x 64 (24 zmm).
#include "device/emu/moe_ffn_kernels.h"

namespace opgate::emu::moe_ffn {
namespace {

__attribute__((target("avx512f,avx2"))) void gemm_f32_avx512(const float* a, int64_t rows, int64_t kdim,
                                                             const float* b, int64_t n, const float* bias,
                                                             float* out) {
  gemm_f32_blocked<F16, 6, 2>(a, rows, kdim, b, n, bias, out);
}

__attribute__((target("avx512f,avx2"))) void gemm_i32_avx512(const int32_t* a, int64_t rows, int64_t lda,
                                                             const PackedInts& b, const int32_t* bias,
                                                             int32_t* out) {
  gemm_i32_blocked<U16, 6, 4>(a, rows, lda, b, bias, out);
}

}  // namespace

const Kernels paths::avx512 = {gemm_f32_avx512, gemm_i32_avx512, 64};

}  // namespace opgate::emu::moe_ffn
