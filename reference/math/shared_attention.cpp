// The kernels of shared_attention.h and their dispatch table. Scalar, SSE2, AVX2 and NEON: the
// "tiled" kernels, shared_simd.h's kernels of that path applied row by row to a converted tile
// (generic code: the path's ISA is in its shared_simd kernels). AVX-512: the register-blocked
// kernels (shared_attention_vec.h) compiled in reference/math/x86_64/shared_attention_avx512.cpp.
#include "reference/math/shared_attention.h"

#include <cmath>
#include <vector>

namespace opgate::math {
namespace {

// ---- scalar, SSE2, AVX2 and NEON: shared_simd.h's kernels row by row ----------------------------
// The rows converted to a double tile (shared_simd's exact halves_to_double), then dot8_abs,
// scaled_add and deviation_add of that path per row and head: by definition the same bits. (GCC
// lowers 8-double vectors held across a loop poorly where they are not one register, so the
// register-blocked kernels are compiled for AVX-512 only.)

const double* tile_of(const Kernels& k, const void* rows, RowType type, int64_t elements, std::vector<double>& buf) {
  if (type == RowType::kF64) return static_cast<const double*>(rows);
  buf.resize(static_cast<size_t>(elements));
  k.halves_to_double(static_cast<const uint16_t*>(rows), elements, type == RowType::kBF16, buf.data());
  return buf.data();
}

template <Isa kIsa>
void scores_tiled(const double* q, int64_t heads, const void* rows, RowType type, int64_t count, int64_t n,
                  double* dot, double* mag) {
  const Kernels& k = kernels(kIsa);
  thread_local std::vector<double> buf;  // one tile per thread, reused
  const double* x = tile_of(k, rows, type, count * n, buf);
  for (int64_t r = 0; r < count; ++r) k.dot8_abs(q, heads, x + r * n, n, dot + r * heads, mag + r * heads);
}

template <Isa kIsa>
void weighted_rows_tiled(double* acc, int64_t heads, const double* p, const void* rows, RowType type, int64_t count,
                         int64_t n, char* nonfinite) {
  const Kernels& k = kernels(kIsa);
  thread_local std::vector<double> buf;  // one tile per thread, reused
  const double* x = tile_of(k, rows, type, count * n, buf);
  for (int64_t r = 0; r < count; ++r) {
    const double* xr = x + r * n;
    if (nonfinite != nullptr) {
      for (int64_t i = 0; i < n; ++i) {
        if (!std::isfinite(xr[i])) nonfinite[r] = 1;
      }
    }
    for (int64_t h = 0; h < heads; ++h) k.scaled_add(acc + h * n, p[r * heads + h], xr, n);
  }
}

// Rows left out of tail_rows add f * m = +0 to the tail here, which leaves it unchanged.
template <Isa kIsa>
void deviation_rows_tiled(double* dev, double* wsum, double* tail, const double* c, int64_t heads, const double* wd,
                          const double* w, const double* f, const char* /*tail_rows*/, const void* rows, RowType type,
                          const double* abs_x, int64_t count, int64_t n) {
  const Kernels& k = kernels(kIsa);
  thread_local std::vector<double> buf;  // one tile per thread, reused
  const double* x = tile_of(k, rows, type, count * n, buf);
  for (int64_t r = 0; r < count; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t j = r * heads + h;
      k.deviation_add(dev + h * n, wsum + h * n, tail + h * n, x + r * n, c + h * n,
                      abs_x != nullptr ? abs_x + r * n : nullptr, wd[j], w[j], f[j], n);
    }
  }
}

template <Isa kIsa>
constexpr AttentionKernels tiled_kernels() {
  return {scores_tiled<kIsa>, weighted_rows_tiled<kIsa>, deviation_rows_tiled<kIsa>};
}

const AttentionKernels kAttention_scalar = tiled_kernels<Isa::kScalar>();
#if OPGATE_ARCH_X86_64
const AttentionKernels kAttention_sse2 = tiled_kernels<Isa::kSse2>();
const AttentionKernels kAttention_avx2 = tiled_kernels<Isa::kAvx2>();
#elif OPGATE_ARCH_AARCH64
const AttentionKernels kAttention_neon = tiled_kernels<Isa::kNeon>();
#endif

// One row per path of this architecture (OPGATE_ARCH_*: the files CMake compiles).
const IsaRow<AttentionKernels> kRows[] = {
    {Isa::kScalar, &kAttention_scalar},
#if OPGATE_ARCH_X86_64
    {Isa::kSse2, &kAttention_sse2},
    {Isa::kAvx2, &kAttention_avx2},
    {Isa::kAvx512, &attention_paths::avx512},
#elif OPGATE_ARCH_AARCH64
    {Isa::kNeon, &kAttention_neon},
#endif
};

}  // namespace

const AttentionKernels& attention_kernels(Isa path) { return pick(kRows, isa_supported(path) ? path : widest_isa()); }

std::vector<Isa> attention_isas() { return table_isas(kRows); }

}  // namespace opgate::math
