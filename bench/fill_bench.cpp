// The fill stage (issue 15 part 4): N(0, 1) values of a 2^24-element bf16 tensor (what
// MoeFinalizeRoutingV2Grad's realistic fill draws), written four ways: the scalar loop the fills
// used before (CounterRng::normal + Tensor::set per element, one thread), normal_block alone on
// each instruction-set path (one thread, no conversion), and the whole chunked fill
// (cases/fill_chunks.h: blocks, bulk conversion, math::parallel_for) at 1 thread and at
// math::threads(). The peer is a memcpy of the bytes the fill writes (2 per element), timed in the
// same process: x_memcpy = seconds per call / memcpy seconds.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "bench/bench_limits.h"
#include "cases/fill_chunks.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "core/tensor.h"

namespace opgate {
namespace {

constexpr int64_t kElements = int64_t{1} << 24;

Tensor& target() {
  static Tensor t = Tensor::zeros(DType::kBF16, {kElements});
  return t;
}

double memcpy_seconds() {
  static const double s = [] {
    const size_t bytes = target().nbytes();
    std::vector<uint8_t> src(bytes, 1), dst(bytes, 0);
    return bench::best_seconds(5, [&] {
      std::memcpy(dst.data(), src.data(), bytes);
      benchmark::DoNotOptimize(dst.data());
    });
  }();
  return s;
}

void report(benchmark::State& state) {
  state.counters["elems_per_s"] = static_cast<double>(kElements) / state.counters["s_per_call"];
  state.counters["memcpy_s"] = memcpy_seconds();
  state.counters["x_memcpy"] = state.counters["s_per_call"] / memcpy_seconds();
}

void BM_fill_scalar_loop(benchmark::State& state) {
  Tensor& t = target();
  const CounterRng rng(7, "gradY");
  bench::measure(state, static_cast<double>(t.nbytes()), 0, [&] {
    for (int64_t i = 0; i < kElements; ++i) t.set(i, rng.normal(static_cast<uint64_t>(i)));
  });
  report(state);
}
BENCHMARK(BM_fill_scalar_loop)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);

// Arg: the RngPath (its Isa value), one run per path of the RNG's table this CPU runs.
void BM_normal_block(benchmark::State& state) {
  const auto path = static_cast<RngPath>(state.range(0));
  const RngPath saved = rng_path();
  set_rng_path(path);
  state.SetLabel(rng_path_name(path));
  const CounterRng rng(7, "gradY");
  std::vector<double> out(static_cast<size_t>(cases::kFillChunk));
  bench::measure(state, static_cast<double>(target().nbytes()), 0, [&] {
    for (int64_t first = 0; first < kElements; first += cases::kFillChunk) {
      rng.normal_block(static_cast<uint64_t>(first), cases::kFillChunk, out.data());
      benchmark::DoNotOptimize(out.data());
    }
  });
  report(state);
  set_rng_path(saved);
}
void rng_path_args(benchmark::internal::Benchmark* b) {
  for (RngPath path : rng_paths()) b->Arg(static_cast<int64_t>(path));
}
BENCHMARK(BM_normal_block)->Apply(rng_path_args)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(3);

// Arg: threads (0 = math::threads() default).
void BM_fill_chunks(benchmark::State& state) {
  Tensor& t = target();
  const int64_t saved = math::threads();
  if (state.range(0) > 0) math::set_threads(state.range(0));
  state.SetLabel(std::string(rng_path_name(rng_path())) + ", threads " + std::to_string(math::threads()));
  const CounterRng rng(7, "gradY");
  bench::measure(state, static_cast<double>(t.nbytes()), 0, [&] {
    cases::fill_chunks(t, [&](int64_t first, int64_t n, double* out) {
      cases::normals(rng, static_cast<uint64_t>(first), n, 1.0, out);
    });
  });
  report(state);
  math::set_threads(saved);
}
BENCHMARK(BM_fill_chunks)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(3);

}  // namespace
}  // namespace opgate
