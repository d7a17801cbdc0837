// Dynamic scheduling of [0, n) over std::threads: each worker takes the next unclaimed index, so
// rows of unequal length (different L_b) balance, while every index is still computed alone.
#include "reference/math/incre_flash_attention_v3_parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace opgate::ifa_math {

void parallel_for(int64_t n, const std::function<void(int64_t)>& fn, int64_t min_per_thread) {
  if (n <= 0) return;
  const int64_t hw = std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()));
  const int64_t threads = std::min(hw, std::max<int64_t>(1, n / std::max<int64_t>(1, min_per_thread)));
  if (threads <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    for (int64_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads - 1));
  for (int64_t k = 1; k < threads; ++k) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

}  // namespace opgate::ifa_math
