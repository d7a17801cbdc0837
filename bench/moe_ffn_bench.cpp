// Reference vs emulator of MoeFFN at the size: M = 2048 tokens over E = 8 experts, K1 = 1024,
// N1 = 2816, fp16 high-performance path with biases and fastgelu; report the time of each.
#include <benchmark/benchmark.h>

#include "cases/moe_ffn.h"
#include "core/guard.h"
#include "device/emu/moe_ffn.h"

namespace opgate {
namespace {

namespace mffn = cases::moe_ffn;

struct Fixture {
  mffn::Params p;
  SpecMap specs;
  TensorMap in;
  Fixture() {
    auto pk = mffn::Builder().tokens({256, 256, 256, 256, 256, 256, 256, 256}).k1(1024).n1(2816).bias1().bias2().build();
    p = pk.first;
    specs = ref::moe_ffn::specs(p);
    in = mffn::fill(p, pk.second, specs, FillMode::kRealistic, 1).value();
  }
};

// Floating-point operations of the two matmuls: 2 * M * K1 * N1 each.
int64_t flops(const mffn::Params& p) { return 4 * p.m * p.k1 * p.n1; }

void BM_mffn_reference(benchmark::State& state) {
  static const Fixture f;
  for (auto _ : state) benchmark::DoNotOptimize(ref::moe_ffn::reference(f.p, f.in));
  state.counters["GFLOP/s"] = benchmark::Counter(static_cast<double>(flops(f.p)) * 1e-9 * static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate);
}
BENCHMARK(BM_mffn_reference)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);

void BM_mffn_emu(benchmark::State& state) {
  static const Fixture f;
  TensorMap out;
  out["y"] = make_guarded(f.specs.at("y").dtype, f.specs.at("y").shape).tensor;
  for (auto _ : state) benchmark::DoNotOptimize(emu::moe_ffn::run(f.p, f.in, out, ""));
  state.counters["GFLOP/s"] = benchmark::Counter(static_cast<double>(flops(f.p)) * 1e-9 * static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate);
}
BENCHMARK(BM_mffn_emu)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);

}  // namespace
}  // namespace opgate
