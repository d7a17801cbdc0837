// Double matrix products of the aclnnMoeFFN reference on the shared vector kernel
// (shared_simd.h gemm_panel8: 8 output columns per vector, register tiles of rows). Every output
// element is one sequential sum in increasing k, whatever the ISA path or tiling.
#include "reference/moe_ffn/moe_ffn_gemm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "reference/math/shared_simd.h"

namespace opgate::ref::moe_ffn {
namespace {

constexpr int64_t kPanel = 8;    // columns of b packed together (one 8-double vector)
constexpr int64_t kDepth = 128;  // k per block: a block of 64 rows of a (64 KiB) stays in L2

// out = a * f(b) with f = identity or |.|, by blocks of k (each element's sum continues from the
// previous block's partial sum, so the order stays increasing k) and 8-column panels of b packed
// contiguously (zero-padded at the right edge); a ragged panel goes through a rows x 8 scratch of
// which `cols` columns are kept.
template <bool kAbs>
void product(const double* a, int64_t rows, int64_t kdim, const double* b, int64_t n, double* out) {
  const math::Kernels& kn = math::kernels();
  std::vector<double> panel(static_cast<size_t>(kDepth * kPanel));
  const int64_t edge_cols = n % kPanel;
  std::vector<double> edge(static_cast<size_t>(edge_cols > 0 ? rows * kPanel : 0));
  for (int64_t k0 = 0; k0 < kdim; k0 += kDepth) {
    const int64_t depth = std::min(kDepth, kdim - k0);
    const bool accumulate = k0 > 0;
    for (int64_t j0 = 0; j0 < n; j0 += kPanel) {
      const int64_t cols = std::min(kPanel, n - j0);
      for (int64_t k = 0; k < depth; ++k) {
        for (int64_t j = 0; j < kPanel; ++j) {
          const double v = j < cols ? b[(k0 + k) * n + j0 + j] : 0.0;
          panel[static_cast<size_t>(k * kPanel + j)] = kAbs ? std::fabs(v) : v;
        }
      }
      if (cols == kPanel) {
        kn.gemm_panel8(a + k0, rows, kdim, depth, panel.data(), out + j0, n, accumulate);
      } else {
        kn.gemm_panel8(a + k0, rows, kdim, depth, panel.data(), edge.data(), kPanel, accumulate);
      }
    }
  }
  for (int64_t r = 0; edge_cols > 0 && r < rows; ++r) {
    std::copy_n(edge.data() + r * kPanel, edge_cols, out + r * n + (n - edge_cols));
  }
}

}  // namespace

void gemm_rows(const double* a, int64_t rows, int64_t kdim, const double* b, int64_t n, double* out,
               const double* w, double* mag) {
  product<false>(a, rows, kdim, b, n, out);
  if (w != nullptr && mag != nullptr) product<true>(w, rows, kdim, b, n, mag);
}

}  // namespace opgate::ref::moe_ffn
