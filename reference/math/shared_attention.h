// Double kernels of the attention reference (IncreFlashAttentionV3) with runtime ISA dispatch (the
// path of shared_simd.h's isa()). They read key/value rows directly from the cache (fp16/bf16
// bits, converted exactly) or from double rows, and each output element is the same sequence of
// rounded operations as shared_simd.h's dot8_abs, scaled_add and deviation_add applied row by
// row; the scalar, SSE2, AVX2 and NEON paths are exactly that (the "tiled" kernels over that
// path's shared_simd kernels), the AVX-512 path vectorises across heads, columns and the lanes of
// one fixed-lane dot product (never inside one sum, no FMA). So every path gives the same bits;
// tests/reference/shared_attention_test.cpp compares them.
#pragma once

#include <cstdint>
#include <vector>

#include "reference/math/shared_simd.h"

namespace opgate::math {

// Element type of the rows a kernel reads: row r, element i at rows[r * n + i].
enum class RowType : uint8_t { kF64, kF16, kBF16 };

struct AttentionKernels {
  // For r < count, h < heads: dot[r * heads + h] and mag[r * heads + h] are shared_simd.h's
  // dot8_abs of q_h = q + h * n with row r (8 lanes, element i to lane i % 8, then the tree).
  void (*scores)(const double* q, int64_t heads, const void* rows, RowType type, int64_t count, int64_t n,
                 double* dot, double* mag);
  // For r = 0 .. count-1 in order, h < heads, i < n:
  //   acc[h * n + i] = acc[h * n + i] + p[r * heads + h] * x_r[i]   (product rounded, then the sum).
  // With fp16/bf16 rows and nonfinite != nullptr, sets nonfinite[r] = 1 for a row holding an Inf
  // or NaN (other entries are left alone); nonfinite must be null for kF64 rows.
  void (*weighted_rows)(double* acc, int64_t heads, const double* p, const void* rows, RowType type, int64_t count,
                        int64_t n, char* nonfinite);
  // For r = 0 .. count-1 in order, h < heads, i < n, k = r * heads + h, m = abs_x ? abs_x[r * n + i]
  // : |x_r[i]|:  dev[h*n+i] += wd[k] * |x_r[i] - c[h*n+i]|;  wsum[h*n+i] += w[k] * m;  and, when
  // tail_rows is null or tail_rows[r] != 0, tail[h*n+i] += f[k] * m. A caller may leave a row out
  // of tail_rows only when that row's f[k] * m are all zeros (f = 0 and m finite): the sum is then
  // unchanged (x + 0 = x; tail never holds -0).
  void (*deviation_rows)(double* dev, double* wsum, double* tail, const double* c, int64_t heads, const double* wd,
                         const double* w, const double* f, const char* tail_rows, const void* rows, RowType type,
                         const double* abs_x, int64_t count, int64_t n);
};

// The kernels of a path (an unsupported path gives the widest supported one's).
const AttentionKernels& attention_kernels(Isa isa);
inline const AttentionKernels& attention_kernels() { return attention_kernels(isa()); }
// The paths this build and CPU run these kernels on, scalar first (tests iterate them).
std::vector<Isa> attention_isas();

// The register-blocked paths' tables, each defined in reference/math/<arch>/
// shared_attention_<isa>.cpp (only the build architecture's exist).
namespace attention_paths {
extern const AttentionKernels avx512;
}  // namespace attention_paths

}  // namespace opgate::math
