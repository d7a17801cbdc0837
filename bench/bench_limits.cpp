// Copy-bandwidth and peak-flops probes (bench_limits.h).
#include "bench/bench_limits.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstring>
#include <vector>

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

constexpr int64_t kIters = 20'000'000;

// 12 independent accumulators hide the FMA latency; flops = 2 per lane per FMA.
__attribute__((target("avx512f"))) double fma_chains_avx512() {
  __m512d acc[12];
  for (auto& a : acc) a = _mm512_set1_pd(1.0);
  const __m512d m = _mm512_set1_pd(0.999999), c = _mm512_set1_pd(1e-7);
  for (int64_t i = 0; i < kIters / 2; ++i) {
    for (auto& a : acc) a = _mm512_fmadd_pd(a, m, c);
  }
  for (auto& a : acc) benchmark::DoNotOptimize(a);
  return 2.0 * 8 * 12 * static_cast<double>(kIters / 2);
}

__attribute__((target("avx2,fma"))) double fma_chains_avx2() {
  __m256d acc[12];
  for (auto& a : acc) a = _mm256_set1_pd(1.0);
  const __m256d m = _mm256_set1_pd(0.999999), c = _mm256_set1_pd(1e-7);
  for (int64_t i = 0; i < kIters; ++i) {
    for (auto& a : acc) a = _mm256_fmadd_pd(a, m, c);
  }
  for (auto& a : acc) benchmark::DoNotOptimize(a);
  return 2.0 * 4 * 12 * static_cast<double>(kIters);
}

// Multiply and add as separate instructions (the references' own peak: no FMA).
__attribute__((target("avx2"))) double mul_add_chains_avx2() {
  __m256d acc[6], prod[6];  // 12 chains + 2 constants fit the 16 ymm registers
  for (auto& a : acc) a = _mm256_set1_pd(1.0);
  for (auto& a : prod) a = _mm256_set1_pd(1.0);
  const __m256d m = _mm256_set1_pd(0.999999), c = _mm256_set1_pd(1e-7);
  for (int64_t i = 0; i < kIters; ++i) {
    for (int k = 0; k < 6; ++k) {
      prod[k] = _mm256_mul_pd(prod[k], m);
      acc[k] = _mm256_add_pd(acc[k], c);
    }
  }
  for (auto& a : acc) benchmark::DoNotOptimize(a);
  for (auto& a : prod) benchmark::DoNotOptimize(a);
  return 4.0 * 12 * static_cast<double>(kIters);
}

// The same on 512-bit vectors (32 zmm registers hold 24 chains): the ceiling of the AVX-512
// kernels of the references, which the 256-bit probe understates.
__attribute__((target("avx512f"))) double mul_add_chains_avx512() {
  __m512d acc[12], prod[12];
  for (auto& a : acc) a = _mm512_set1_pd(1.0);
  for (auto& a : prod) a = _mm512_set1_pd(1.0);
  const __m512d m = _mm512_set1_pd(0.999999), c = _mm512_set1_pd(1e-7);
  for (int64_t i = 0; i < kIters / 4; ++i) {
    for (int k = 0; k < 12; ++k) {
      prod[k] = _mm512_mul_pd(prod[k], m);
      acc[k] = _mm512_add_pd(acc[k], c);
    }
  }
  for (auto& a : acc) benchmark::DoNotOptimize(a);
  for (auto& a : prod) benchmark::DoNotOptimize(a);
  return 8.0 * 24 * static_cast<double>(kIters / 4);
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
    __builtin_cpu_init();
    l.copy_gbs = best_of_3(copy_probe);
    const bool avx512 = __builtin_cpu_supports("avx512f");
    const bool avx2fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (avx512) l.peak_gflops = best_of_3([] { return flops_probe(fma_chains_avx512); });
    if (avx2fma) l.peak_gflops = std::max(l.peak_gflops, best_of_3([] { return flops_probe(fma_chains_avx2); }));
    if (__builtin_cpu_supports("avx2")) l.nofma_gflops = best_of_3([] { return flops_probe(mul_add_chains_avx2); });
    if (avx512) {
      l.nofma_gflops = std::max(l.nofma_gflops, best_of_3([] { return flops_probe(mul_add_chains_avx512); }));
    }
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
