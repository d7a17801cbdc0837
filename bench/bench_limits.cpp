// Copy-bandwidth and peak-flops probes (bench_limits.h).
#include "bench/bench_limits.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstring>
#include <vector>

#include "bench/bench_peak.h"
#include "core/parallel.h"

namespace opgate::bench {
namespace {

// CPU seconds of the whole process (all threads): on a loaded machine, wall time includes waiting
// for a core, CPU time does not.
double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// 256 MiB, far beyond the last-level cache, copied by every thread in its own slice.
double copy_probe() {
  const size_t bytes = size_t{256} << 20;
  const int64_t parts = math::threads();
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  const size_t slice = bytes / static_cast<size_t>(parts);
  const double t0 = now();
  math::parallel_for(parts, [&](int64_t i) {
    std::memcpy(dst.data() + static_cast<size_t>(i) * slice, src.data() + static_cast<size_t>(i) * slice, slice);
  });
  const double t = now() - t0;
  benchmark::DoNotOptimize(dst.data());
  return 2.0 * static_cast<double>(slice * static_cast<size_t>(parts)) / t * 1e-9;
}

double flops_probe(double (*chains)()) {
  const int64_t parts = math::threads();
  std::vector<double> flops(static_cast<size_t>(parts));
  const double t0 = now();
  math::parallel_for(parts, [&](int64_t i) { flops[static_cast<size_t>(i)] = chains(); });
  const double t = now() - t0;
  double total = 0;
  for (double f : flops) total += f;
  return total / t * 1e-9;
}

double best_of_3(const std::function<double()>& probe) {
  double best = 0;
  for (int i = 0; i < 3; ++i) best = std::max(best, probe());
  return best;
}

}  // namespace

const Limits& machine_limits() {
  static const Limits limits = [] {
    Limits l;
    l.copy_gbs = best_of_3(copy_probe);
    for (Chains c : fma_chains()) l.peak_gflops = std::max(l.peak_gflops, best_of_3([c] { return flops_probe(c); }));
    for (Chains c : nofma_chains()) l.nofma_gflops = std::max(l.nofma_gflops, best_of_3([c] { return flops_probe(c); }));
    return l;
  }();
  return limits;
}

double best_seconds(int runs, const std::function<void()>& fn) {
  double best = 1e300;
  for (int i = 0; i < runs; ++i) {
    const double t0 = now();
    fn();
    best = std::min(best, now() - t0);
  }
  return best;
}

void measure(benchmark::State& state, double bytes, double flops, const std::function<void()>& fn) {
  const Limits& limits = machine_limits();
  double total = 0, cpu = 0;
  for (auto _ : state) {
    const double c0 = cpu_now();
    const double t0 = now();
    fn();
    const double t = now() - t0;
    cpu += cpu_now() - c0;
    state.SetIterationTime(t);
    total += t;
  }
  const double per_call = total / static_cast<double>(state.iterations());
  state.counters["s_per_call"] = per_call;
  state.counters["cpu_s_per_call"] = cpu / static_cast<double>(state.iterations());
  state.counters["threads"] = static_cast<double>(math::threads());
  if (bytes > 0) {
    const double gbs = bytes / per_call * 1e-9;
    state.counters["GB/s"] = gbs;
    state.counters["limit_GB/s"] = limits.copy_gbs;
    state.counters["frac_bw"] = gbs / limits.copy_gbs;
  }
  if (flops > 0) {
    const double gflops = flops / per_call * 1e-9;
    state.counters["GFLOP/s"] = gflops;
    state.counters["peak_GFLOP/s"] = limits.peak_gflops;
    state.counters["nofma_GFLOP/s"] = limits.nofma_gflops;
    state.counters["frac_peak"] = gflops / limits.peak_gflops;
  }
}

}  // namespace opgate::bench
