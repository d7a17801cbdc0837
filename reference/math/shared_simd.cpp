// The kernels of shared_simd.h: the plain scalar formulation, the dispatch table over the ISA paths
// (the vector formulation, shared_simd_vec.h, compiled per path in reference/math/<arch>/
// shared_simd_<isa>.cpp), and the choice of path.
#include "reference/math/shared_simd.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "core/dtype.h"

namespace opgate::math {
namespace {

// ---- scalar formulation -------------------------------------------------------------------------

void dot8_abs_scalar(const double* x, int64_t heads, const double* y, int64_t n, double* dot, double* mag) {
  for (int64_t h = 0; h < heads; ++h) {
    const double* xh = x + h * n;
    double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    double lane_abs[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t i = 0; i < n; ++i) {
      const double v = xh[i] * y[i];
      lane[i % 8] += v;
      lane_abs[i % 8] += std::fabs(v);
    }
    dot[h] = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    mag[h] = ((lane_abs[0] + lane_abs[1]) + (lane_abs[2] + lane_abs[3])) +
             ((lane_abs[4] + lane_abs[5]) + (lane_abs[6] + lane_abs[7]));
  }
}

void scaled_add_scalar(double* acc, double a, const double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = acc[i] + a * x[i];
}

void deviation_add_scalar(double* dev, double* wsum, double* tail, const double* x, const double* c,
                          const double* abs_x, double wd, double w, double f, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double m = abs_x != nullptr ? abs_x[i] : std::fabs(x[i]);
    dev[i] += wd * std::fabs(x[i] - c[i]);
    wsum[i] += w * m;
    tail[i] += f * m;
  }
}

void slot8_dot_scalar(const double* x, const double* b, const double* g, int64_t n, double* sum, double* mag) {
  for (int s = 0; s < 8; ++s) {
    for (int64_t j = 0; j < n; ++j) {
      const double t = (x[j * 8 + s] + b[j * 8 + s]) * g[j];
      sum[s] += t;
      mag[s] += std::fabs(t);
    }
  }
}

void gemm_panel8_scalar(const double* a, int64_t rows, int64_t lda, int64_t kdim, const double* panel, double* out,
                        int64_t ldo, bool accumulate) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < 8; ++j) {
      double acc = accumulate ? out[r * ldo + j] : 0.0;
      for (int64_t k = 0; k < kdim; ++k) acc += a[r * lda + k] * panel[k * 8 + j];
      out[r * ldo + j] = acc;
    }
  }
}

const double* half_table(bool bf16) {
  static const std::vector<double> half = [] {
    std::vector<double> v(65536);
    for (uint32_t b = 0; b < 65536; ++b) v[b] = f16_to_double(static_cast<uint16_t>(b));
    return v;
  }();
  static const std::vector<double> bfloat = [] {
    std::vector<double> v(65536);
    for (uint32_t b = 0; b < 65536; ++b) v[b] = bf16_to_double(static_cast<uint16_t>(b));
    return v;
  }();
  return bf16 ? bfloat.data() : half.data();
}

void halves_to_double_scalar(const uint16_t* src, int64_t count, bool bf16, double* dst) {
  const double* tab = half_table(bf16);
  for (int64_t i = 0; i < count; ++i) dst[i] = tab[src[i]];
}

const Kernels kKernels_scalar = {dot8_abs_scalar,  scaled_add_scalar,  deviation_add_scalar,
                                 slot8_dot_scalar, gemm_panel8_scalar, halves_to_double_scalar};

// One row per path of this architecture (OPGATE_ARCH_*: the files CMake compiles).
const IsaRow<Kernels> kRows[] = {
    {Isa::kScalar, &kKernels_scalar},
#if OPGATE_ARCH_X86_64
    {Isa::kSse2, &simd_paths::sse2},
    {Isa::kAvx2, &simd_paths::avx2},
    {Isa::kAvx512, &simd_paths::avx512},
#elif OPGATE_ARCH_AARCH64
    {Isa::kNeon, &simd_paths::neon},
#endif
};

std::atomic<int> g_isa{-1};  // -1: the widest

}  // namespace

const double* exact_half_values(bool bf16) { return half_table(bf16); }

Isa isa() {
  const int v = g_isa.load(std::memory_order_relaxed);
  if (v >= 0) return static_cast<Isa>(v);
  // OPGATE_ISA=scalar|sse2|avx2|avx512|neon pins the path (benchmarks; results are the same on all).
  static const Isa from_env = [] {
    const char* env = std::getenv("OPGATE_ISA");
    const std::optional<Isa> named = env != nullptr ? isa_from_name(env) : std::nullopt;
    return named && isa_supported(*named) ? *named : widest_isa();
  }();
  return from_env;
}

void set_isa(Isa path) {
  g_isa.store(isa_supported(path) ? static_cast<int>(path) : -1, std::memory_order_relaxed);
}

const Kernels& kernels(Isa path) { return pick(kRows, isa_supported(path) ? path : widest_isa()); }

std::vector<Isa> kernel_isas() { return table_isas(kRows); }

}  // namespace opgate::math
