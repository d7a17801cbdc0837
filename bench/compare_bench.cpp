// The compare stage (issue 15 part 4): compare_output over 2^24 elements of a bf16 output, the
// nightly's dominant comparison (MoeFinalizeRoutingV2Grad's gradExpandedX is 235 M of them), with a
// double expected tensor and a u8 care mask, as the runner gives it. Two checks: `exact` (every
// element matches) and a one-rounding `bound` (half an ulp of error on a third of the elements).
// The peer is one read of the same bytes (8 + 2 + 1 per element, summed so it is not optimised
// away), timed in the same process: x_read = seconds per call / read seconds.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "bench/bench_limits.h"
#include "core/compare.h"
#include "core/dtype.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "core/tensor.h"

namespace opgate {
namespace {

constexpr int64_t kRows = 4096, kCols = 4096;
constexpr int64_t kElements = kRows * kCols;

struct Data {
  Tensor expected = Tensor::zeros(DType::kF64, {kRows, kCols});
  Tensor got = Tensor::zeros(DType::kBF16, {kRows, kCols});
  Tensor got_off = Tensor::zeros(DType::kBF16, {kRows, kCols});
  Tensor magnitude = Tensor::zeros(DType::kF64, {kRows, kCols});
  Tensor care = Tensor::zeros(DType::kU8, {kRows, kCols});
};

// Expected values that bf16 holds exactly (so `exact` passes), the last 64 rows not cared (as a
// dropped token's rows are not), and a copy one ulp off on every third element.
const Data& data() {
  static const Data d = [] {
    Data d;
    const CounterRng rng(11, "compare");
    auto* e = d.expected.ptr<double>();
    auto* mag = d.magnitude.ptr<double>();
    auto* care = d.care.ptr<uint8_t>();
    for (int64_t i = 0; i < kElements; ++i) {
      e[i] = round_to(DType::kBF16, rng.normal(static_cast<uint64_t>(i)), Rounding::kNearestEven);
      mag[i] = std::fabs(e[i]) * 4;
      care[i] = i < (kRows - 64) * kCols ? 1 : 0;
      d.got.set(i, e[i]);
      d.got_off.set(i, i % 3 == 0 ? e[i] + ulp(DType::kBF16, e[i]) / 2 : e[i]);
    }
    return d;
  }();
  return d;
}

double read_seconds() {
  static const double s = [] {
    const Data& d = data();
    return bench::best_seconds(3, [&] {
      uint64_t sum = 0;
      for (const Tensor* t : {&d.expected, &d.got, &d.care}) {
        const uint8_t* p = t->data();
        const size_t n = t->nbytes() / 8;
        for (size_t k = 0; k < n; ++k) {
          uint64_t w;
          std::memcpy(&w, p + 8 * k, 8);
          sum += w;
        }
      }
      benchmark::DoNotOptimize(sum);
    });
  }();
  return s;
}

void report(benchmark::State& state) {
  state.counters["ns_per_elem"] = state.counters["s_per_call"] * 1e9 / static_cast<double>(kElements);
  state.counters["read_s"] = read_seconds();
  state.counters["x_read"] = state.counters["s_per_call"] / read_seconds();
}

void BM_compare_exact_bf16(benchmark::State& state) {
  const Data& d = data();
  OutputCheck check;
  check.name = "gradExpandedX";
  check.kind = CheckKind::kExact;
  check.device_dtype = DType::kBF16;
  bench::measure(state, 11.0 * kElements, 0, [&] {
    const CompareResult r = compare_output(check, d.expected, d.got, Tensor(), d.care);
    if (!r.passed) state.SkipWithError("exact compare failed");
  });
  report(state);
}
BENCHMARK(BM_compare_exact_bf16)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(3);

void BM_compare_bound_bf16(benchmark::State& state) {
  const Data& d = data();
  OutputCheck check;
  check.name = "y";
  check.kind = CheckKind::kTolerance;
  check.device_dtype = DType::kBF16;
  check.tol.standard = Standard::kBound;
  check.tol.c = 4;
  check.tol.u_acc = 0x1p-24;
  check.tol.out_ulps = 0.5;
  bench::measure(state, 19.0 * kElements, 0, [&] {
    const CompareResult r = compare_output(check, d.expected, d.got_off, d.magnitude, d.care);
    benchmark::DoNotOptimize(r.metrics.max_abs);
  });
  report(state);
}
BENCHMARK(BM_compare_bound_bf16)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(3);

}  // namespace
}  // namespace opgate
