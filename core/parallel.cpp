// std::thread blocks with dynamic scheduling over [0, n); see parallel.h.
#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <system_error>
#include <thread>
#include <vector>

namespace opgate::math {
namespace {

std::atomic<int64_t> g_threads{0};  // 0: not set, use the default
thread_local bool t_inside = false;  // true on a thread running parallel_for's fn

int64_t default_threads() {
  static const int64_t n = [] {
    const char* env = std::getenv("OPGATE_THREADS");
    const int64_t v = env != nullptr ? parse_threads(env) : -1;
    if (v > 0) return v;
    return std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()));
  }();
  return n;
}

void warn_threads_refused(int64_t wanted, int64_t started, const char* why) {
  static std::atomic<bool> said{false};
  if (said.exchange(true)) return;
  std::fprintf(stderr, "opgate: warning: %lld of %lld threads started (%s); the rest of the work runs on those\n",
               static_cast<long long>(started), static_cast<long long>(wanted), why);
}

}  // namespace

int64_t parse_threads(const char* text) {
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (*end != '\0' || v <= 0 || v > 4096) return -1;
  return static_cast<int64_t>(v);
}

int64_t threads() {
  const int64_t n = g_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : default_threads();
}

void set_threads(int64_t n) { g_threads.store(n > 0 ? n : 0, std::memory_order_relaxed); }

void parallel_for(int64_t n, const std::function<void(int64_t)>& fn, int64_t min_per_thread) {
  if (n <= 0) return;
  const int64_t want = t_inside ? 1 : threads();
  const int64_t count = std::min(want, std::max<int64_t>(1, n / std::max<int64_t>(1, min_per_thread)));
  if (count <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    const bool was_inside = t_inside;
    t_inside = true;
    for (int64_t i = next++; i < n; i = next++) fn(i);
    t_inside = was_inside;
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(count - 1));
  for (int64_t k = 1; k < count; ++k) {
    // A thread the system refuses (an address-space or process limit: --threads 4096 under
    // ulimit -v) leaves its blocks to those that started: every block is still computed once, and
    // no result depends on the thread count. Said once per process.
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error& e) {
      warn_threads_refused(count, static_cast<int64_t>(pool.size()) + 1, e.what());
      break;
    }
  }
  worker();
  for (auto& t : pool) t.join();
}

}  // namespace opgate::math
