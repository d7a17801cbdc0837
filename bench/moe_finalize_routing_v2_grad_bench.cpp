// Reference vs emulator of MoeFinalizeRoutingV2Grad at a DeepSeek-like decode size
// (R = 256 tokens, K = 8, H = 7168, bf16, scales + bias, drop/pad). Bytes: every input tensor once
// (the "GB/s of input"); the reference also writes gradExpandedX (f64, 147 MB here) and its
// care mask, whose allocation alone is timed as a floor (alloc_out_s).
#include <benchmark/benchmark.h>

#include "bench/bench_limits.h"
#include "cases/moe_finalize_routing_v2_grad.h"
#include "core/guard.h"
#include "device/emu/moe_finalize_routing_v2_grad.h"

namespace opgate {
namespace {

namespace mfrg = cases::moe_finalize_routing_v2_grad;

struct Fixture {
  mfrg::Params p;
  SpecMap specs;
  TensorMap in;
  double input_bytes = 0;
  Fixture() {
    auto pk = mfrg::Builder().dtype(DType::kBF16).rows(256).top_k(8).hidden(7168).scales().bias().drop_pad(64, 40).build();
    p = pk.first;
    specs = ref::moe_finalize_routing_v2_grad::specs(p);
    in = mfrg::fill(p, pk.second, specs, FillMode::kRealistic, 1).value();
    for (const auto& [name, t] : in) input_bytes += static_cast<double>(t.nbytes());
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

void BM_mfrg_reference(benchmark::State& state) {
  const Fixture& f = fixture();
  // The floor any reference returning these outputs pays: allocating gradExpandedX as f64 and its
  // U8 care mask (zeroed, first touch), then freeing them.
  const Shape gx = f.specs.at("gradExpandedXOut").shape;
  const double alloc_s = bench::best_seconds(3, [&] {
    Tensor a = Tensor::zeros(DType::kF64, gx), b = Tensor::zeros(DType::kU8, gx);
    benchmark::DoNotOptimize(a.data());
    benchmark::DoNotOptimize(b.data());
  });
  bench::measure(state, f.input_bytes, 0,
                 [&] { benchmark::DoNotOptimize(ref::moe_finalize_routing_v2_grad::reference(f.p, f.in)); });
  state.counters["alloc_out_s"] = alloc_s;
  state.counters["x_alloc_out"] = state.counters["s_per_call"] / alloc_s;
}
BENCHMARK(BM_mfrg_reference)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(5);

void BM_mfrg_emu(benchmark::State& state) {
  const Fixture& f = fixture();
  TensorMap out;
  for (const char* name : {"gradExpandedXOut", "gradScalesOut"}) {
    out[name] = make_guarded(f.specs.at(name).dtype, f.specs.at(name).shape).tensor;
  }
  bench::measure(state, f.input_bytes, 0,
                 [&] { benchmark::DoNotOptimize(emu::moe_finalize_routing_v2_grad::run(f.p, f.in, out, "")); });
}
BENCHMARK(BM_mfrg_emu)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(5);

}  // namespace
}  // namespace opgate
