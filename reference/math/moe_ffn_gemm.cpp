// Register-tiled double matrix products and the row-block thread fan-out of the aclnnMoeFFN
// reference. Every output element is one sequential sum in increasing k, whatever the tiling.
#include "reference/math/moe_ffn_gemm.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

namespace opgate::ref::moe_ffn {
namespace {

// Two rows by eight columns of accumulators fit the sixteen SSE registers with room for the
// operands; a 64-row block of `a` stays in L2 while a packed K x 8 panel of `b` is reused.
constexpr int64_t kTileRows = 2;
constexpr int64_t kTileCols = 8;
constexpr int64_t kBlockRows = 64;
constexpr unsigned kMaxThreads = 16;

// out[r][j] = sum_k a[r][k] * panel[k][j] for one full 2 x 8 tile; `panel` is K x 8, packed.
void full_tile(const double* a, int64_t kdim, const double* panel, int64_t n, double* out) {
  double acc0[kTileCols] = {};
  double acc1[kTileCols] = {};
  const double* a0 = a;
  const double* a1 = a + kdim;
  for (int64_t k = 0; k < kdim; ++k) {
    const double* bk = panel + k * kTileCols;
    const double x0 = a0[k];
    const double x1 = a1[k];
    for (int64_t j = 0; j < kTileCols; ++j) {
      acc0[j] += x0 * bk[j];
      acc1[j] += x1 * bk[j];
    }
  }
  std::copy_n(acc0, kTileCols, out);
  std::copy_n(acc1, kTileCols, out + n);
}

// The same for a ragged tile at the bottom or right edge.
void edge_tile(const double* a, int64_t rows, int64_t kdim, const double* panel, int64_t n, int64_t cols,
               double* out) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < kdim; ++k) acc += a[i * kdim + k] * panel[k * kTileCols + j];
      out[i * n + j] = acc;
    }
  }
}

// out = a * f(b) with f = identity or |.|: each K x 8 column panel of b is packed once (contiguous,
// so the tile loop streams it instead of touching a new page per k) and reused by every row pair.
template <bool kAbs>
void product(const double* a, int64_t rows, int64_t kdim, const double* b, int64_t n, double* out) {
  std::vector<double> panel(static_cast<size_t>(kdim * kTileCols));
  for (int64_t j0 = 0; j0 < n; j0 += kTileCols) {
    const int64_t cols = std::min(kTileCols, n - j0);
    for (int64_t k = 0; k < kdim; ++k) {
      for (int64_t j = 0; j < kTileCols; ++j) {
        const double v = j < cols ? b[k * n + j0 + j] : 0.0;
        panel[static_cast<size_t>(k * kTileCols + j)] = kAbs ? std::fabs(v) : v;
      }
    }
    for (int64_t r0 = 0; r0 < rows; r0 += kBlockRows) {
      const int64_t block = std::min(kBlockRows, rows - r0);
      for (int64_t i = 0; i < block; i += kTileRows) {
        const int64_t tr = std::min(kTileRows, block - i);
        const double* ai = a + (r0 + i) * kdim;
        double* oi = out + (r0 + i) * n + j0;
        if (tr == kTileRows && cols == kTileCols) {
          full_tile(ai, kdim, panel.data(), n, oi);
        } else {
          edge_tile(ai, tr, kdim, panel.data(), n, cols, oi);
        }
      }
    }
  }
}

}  // namespace

void gemm_rows(const double* a, int64_t rows, int64_t kdim, const double* b, int64_t n, double* out,
               const double* w, double* mag) {
  product<false>(a, rows, kdim, b, n, out);
  if (w != nullptr && mag != nullptr) product<true>(w, rows, kdim, b, n, mag);
}

void parallel_for(int64_t tasks, const std::function<void(int64_t)>& fn) {
  const unsigned hw = std::max(1u, std::min(std::thread::hardware_concurrency(), kMaxThreads));
  const auto threads = static_cast<unsigned>(std::min<int64_t>(hw, tasks));
  if (threads <= 1) {
    for (int64_t t = 0; t < tasks; ++t) fn(t);
    return;
  }
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    for (int64_t t = next++; t < tasks; t = next++) fn(t);
  };
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (std::thread& th : pool) th.join();
}

}  // namespace opgate::ref::moe_ffn
