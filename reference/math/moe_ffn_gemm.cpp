// Double matrix products of the aclnnMoeFFN reference on the shared vector kernel
// (shared_simd.h gemm_panel8: 8 output columns per vector, register tiles of rows), and its
// thread fan-out, which is the project's one parallel loop. Every output element is one sequential
// sum in increasing k, whatever the ISA path, tiling or thread count.
#include "reference/math/moe_ffn_gemm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "reference/math/shared_parallel.h"
#include "reference/math/shared_simd.h"

namespace opgate::ref::moe_ffn {
namespace {

constexpr int64_t kPanel = 8;  // columns of b packed together (one 8-double vector)

// out = a * f(b) with f = identity or |.|: each K x 8 column panel of b is packed once (contiguous,
// zero-padded at the right edge) and multiplied by all rows; a ragged panel goes through a
// rows x 8 scratch of which `cols` columns are kept.
template <bool kAbs>
void product(const double* a, int64_t rows, int64_t kdim, const double* b, int64_t n, double* out) {
  const math::Kernels& kn = math::kernels();
  std::vector<double> panel(static_cast<size_t>(kdim * kPanel));
  std::vector<double> edge;
  for (int64_t j0 = 0; j0 < n; j0 += kPanel) {
    const int64_t cols = std::min(kPanel, n - j0);
    for (int64_t k = 0; k < kdim; ++k) {
      for (int64_t j = 0; j < kPanel; ++j) {
        const double v = j < cols ? b[k * n + j0 + j] : 0.0;
        panel[static_cast<size_t>(k * kPanel + j)] = kAbs ? std::fabs(v) : v;
      }
    }
    if (cols == kPanel) {
      kn.gemm_panel8(a, rows, kdim, kdim, panel.data(), out + j0, n);
      continue;
    }
    edge.assign(static_cast<size_t>(rows * kPanel), 0.0);
    kn.gemm_panel8(a, rows, kdim, kdim, panel.data(), edge.data(), kPanel);
    for (int64_t r = 0; r < rows; ++r) std::copy_n(edge.data() + r * kPanel, cols, out + r * n + j0);
  }
}

}  // namespace

void gemm_rows(const double* a, int64_t rows, int64_t kdim, const double* b, int64_t n, double* out,
               const double* w, double* mag) {
  product<false>(a, rows, kdim, b, n, out);
  if (w != nullptr && mag != nullptr) product<true>(w, rows, kdim, b, n, mag);
}

void parallel_for(int64_t tasks, const std::function<void(int64_t)>& fn) { math::parallel_for(tasks, fn); }

}  // namespace opgate::ref::moe_ffn
