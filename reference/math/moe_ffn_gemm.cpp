// Cache-tiled double matrix products and the row-block thread fan-out of the aclnnMoeFFN reference.
#include "reference/math/moe_ffn_gemm.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

namespace opgate::ref::moe_ffn {
namespace {

// Eight rows by 256 columns of accumulators (16 KiB each) stay in L1 while a row of b streams by.
constexpr int64_t kRowTile = 8;
constexpr int64_t kColTile = 256;
constexpr unsigned kMaxThreads = 16;

}  // namespace

void gemm_rows(const double* a, int64_t rows, int64_t kdim, const double* b, int64_t n, double* out,
               const double* w, double* mag) {
  const bool with_mag = w != nullptr && mag != nullptr;
  std::vector<double> acc(static_cast<size_t>(kRowTile * kColTile));
  std::vector<double> acc_mag(with_mag ? acc.size() : 0);
  for (int64_t r0 = 0; r0 < rows; r0 += kRowTile) {
    const int64_t rt = std::min(kRowTile, rows - r0);
    for (int64_t j0 = 0; j0 < n; j0 += kColTile) {
      const int64_t jt = std::min(kColTile, n - j0);
      std::fill(acc.begin(), acc.end(), 0.0);
      std::fill(acc_mag.begin(), acc_mag.end(), 0.0);
      for (int64_t k = 0; k < kdim; ++k) {
        const double* brow = b + k * n + j0;
        for (int64_t i = 0; i < rt; ++i) {
          const double av = a[(r0 + i) * kdim + k];
          double* dst = acc.data() + i * kColTile;
          for (int64_t j = 0; j < jt; ++j) dst[j] += av * brow[j];
          if (with_mag) {
            const double wv = w[(r0 + i) * kdim + k];
            double* dm = acc_mag.data() + i * kColTile;
            for (int64_t j = 0; j < jt; ++j) dm[j] += wv * std::fabs(brow[j]);
          }
        }
      }
      for (int64_t i = 0; i < rt; ++i) {
        std::copy_n(acc.data() + i * kColTile, jt, out + (r0 + i) * n + j0);
        if (with_mag) std::copy_n(acc_mag.data() + i * kColTile, jt, mag + (r0 + i) * n + j0);
      }
    }
  }
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
