// Row-major double matrix products for the aclnnMoeFFN reference, tiled for the cache (DESIGN.md
// §8: every output element is one sequential sum in a fixed order, whatever the tiling).
#pragma once

#include <cstdint>

namespace opgate::ref::moe_ffn {

// out[r][j] = sum_k a[r][k] * b[k][j] for r < rows, j < n, the sum in increasing k.
// When `w` and `mag` are given, also mag[r][j] = sum_k w[r][k] * |b[k][j]| (the magnitude of the
// same contraction with per-term weights). a, w: rows x kdim; b: kdim x n; out, mag: rows x n.
void gemm_rows(const double* a, int64_t rows, int64_t kdim, const double* b, int64_t n, double* out,
               const double* w = nullptr, double* mag = nullptr);

}  // namespace opgate::ref::moe_ffn
