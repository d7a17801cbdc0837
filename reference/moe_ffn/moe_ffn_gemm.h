// Row-major double matrix products for the aclnnMoeFFN reference, tiled for the cache (DESIGN.md
// §8: every output element is one sequential sum in a fixed order, whatever the tiling).
#pragma once

#include <cstdint>

namespace opgate::ref::moe_ffn {

// A right-hand matrix: doubles, or the fp16 / bf16 patterns of a weight tensor taken at their exact
// values (the weights are not converted to double first: 185 MB each at model sizes).
struct Matrix {
  const double* values = nullptr;
  const uint16_t* halves = nullptr;
  bool bf16 = false;
  // The matrix starting `elements` further.
  Matrix at(int64_t elements) const {
    return values != nullptr ? Matrix{values + elements, nullptr, bf16} : Matrix{nullptr, halves + elements, bf16};
  }
  // Elements [first, first + len) as doubles: a pointer into `values`, or `buf` holding them.
  const double* row(int64_t first, int64_t len, double* buf) const;
};

// out[r][j] = sum_k a[r][k] * b[k][j] for r < rows, j < n, the sum in increasing k.
// When `w` and `mag` are given, also mag[r][j] = sum_k w[r][k] * |b[k][j]| (the magnitude of the
// same contraction with per-term weights). a, w: rows x kdim; b: kdim x n; out, mag: rows x n.
void gemm_rows(const double* a, int64_t rows, int64_t kdim, const Matrix& b, int64_t n, double* out,
               const double* w = nullptr, double* mag = nullptr);

}  // namespace opgate::ref::moe_ffn
