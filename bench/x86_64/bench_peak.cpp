// x86-64's peak-flops probes (bench_peak.h): AVX2 (+FMA) and AVX-512F chains, with target
// attributes on these functions only, chosen at run time by __builtin_cpu_supports (which also
// checks that the OS saves the wide registers).
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include "bench/bench_peak.h"

namespace opgate::bench {
namespace {

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

}  // namespace

std::vector<Chains> fma_chains() {
  __builtin_cpu_init();
  std::vector<Chains> out;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) out.push_back(fma_chains_avx2);
  if (__builtin_cpu_supports("avx512f")) out.push_back(fma_chains_avx512);
  return out;
}

std::vector<Chains> nofma_chains() {
  __builtin_cpu_init();
  std::vector<Chains> out;
  if (__builtin_cpu_supports("avx2")) out.push_back(mul_add_chains_avx2);
  if (__builtin_cpu_supports("avx512f")) out.push_back(mul_add_chains_avx512);
  return out;
}

}  // namespace opgate::bench
