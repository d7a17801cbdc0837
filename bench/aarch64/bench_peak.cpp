// aarch64's peak-flops probes (bench_peak.h) on NEON, the baseline: 2 doubles per q register, FMLA
// chains (vfmaq_f64) for the peak and FMUL + FADD chains for the references' no-FMA ceiling. 24
// independent chains (of the 32 q registers) hide the latency on any core.
#include <arm_neon.h>
#include <benchmark/benchmark.h>

#include "bench/bench_peak.h"

namespace opgate::bench {
namespace {

constexpr int64_t kIters = 20'000'000;

// flops = 2 per lane per FMA.
double fma_chains_neon() {
  float64x2_t acc[24];
  for (auto& a : acc) a = vdupq_n_f64(1.0);
  const float64x2_t m = vdupq_n_f64(0.999999), c = vdupq_n_f64(1e-7);
  for (int64_t i = 0; i < kIters / 2; ++i) {
    for (auto& a : acc) a = vfmaq_f64(c, a, m);  // c + a * m, one rounding
  }
  for (auto& a : acc) benchmark::DoNotOptimize(a);
  return 2.0 * 2 * 24 * static_cast<double>(kIters / 2);
}

// Multiply and add as separate instructions: 12 product and 12 sum chains.
double mul_add_chains_neon() {
  float64x2_t acc[12], prod[12];
  for (auto& a : acc) a = vdupq_n_f64(1.0);
  for (auto& a : prod) a = vdupq_n_f64(1.0);
  const float64x2_t m = vdupq_n_f64(0.999999), c = vdupq_n_f64(1e-7);
  for (int64_t i = 0; i < kIters / 2; ++i) {
    for (int k = 0; k < 12; ++k) {
      prod[k] = vmulq_f64(prod[k], m);
      acc[k] = vaddq_f64(acc[k], c);
    }
  }
  for (auto& a : acc) benchmark::DoNotOptimize(a);
  for (auto& a : prod) benchmark::DoNotOptimize(a);
  return 2.0 * 24 * static_cast<double>(kIters / 2);
}

}  // namespace

std::vector<Chains> fma_chains() { return {fma_chains_neon}; }

std::vector<Chains> nofma_chains() { return {mul_add_chains_neon}; }

}  // namespace opgate::bench
