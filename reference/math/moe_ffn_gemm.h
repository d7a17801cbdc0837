// Row-major double matrix products for the aclnnMoeFFN reference, tiled for the cache, and the
// thread fan-out over independent row blocks (DESIGN.md §8: results never depend on the thread
// count, because every output element is computed by one thread in a fixed order).
#pragma once

#include <cstdint>
#include <functional>

namespace opgate::ref::moe_ffn {

// out[r][j] = sum_k a[r][k] * b[k][j] for r < rows, j < n, the sum in increasing k.
// When `w` and `mag` are given, also mag[r][j] = sum_k w[r][k] * |b[k][j]| (the magnitude of the
// same contraction with per-term weights). a, w: rows x kdim; b: kdim x n; out, mag: rows x n.
void gemm_rows(const double* a, int64_t rows, int64_t kdim, const double* b, int64_t n, double* out,
               const double* w = nullptr, double* mag = nullptr);

// Runs fn(0) .. fn(tasks - 1) through math::parallel_for (shared_parallel.h: `--threads`). Tasks
// must write disjoint outputs; each task runs on one thread, so results do not depend on the
// thread count.
void parallel_for(int64_t tasks, const std::function<void(int64_t)>& fn);

}  // namespace opgate::ref::moe_ffn
