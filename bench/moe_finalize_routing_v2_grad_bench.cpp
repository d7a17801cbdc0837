// Reference vs emulator of MoeFinalizeRoutingV2Grad at a DeepSeek-like decode size
// (R = 256 tokens, K = 8, H = 7168, bf16, scales + bias, drop/pad); report the ratio emu/ref.
#include <benchmark/benchmark.h>

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
  Fixture() {
    auto pk = mfrg::Builder().dtype(DType::kBF16).rows(256).top_k(8).hidden(7168).bias().drop_pad(64, 40).build();
    p = pk.first;
    specs = ref::moe_finalize_routing_v2_grad::specs(p);
    in = mfrg::fill(p, pk.second, specs, FillMode::kRealistic, 1).value();
  }
};

void BM_mfrg_reference(benchmark::State& state) {
  Fixture f;
  for (auto _ : state) benchmark::DoNotOptimize(ref::moe_finalize_routing_v2_grad::reference(f.p, f.in));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(f.in.at("gradY").nbytes() * 8));
}
BENCHMARK(BM_mfrg_reference)->Unit(benchmark::kMillisecond);

void BM_mfrg_emu(benchmark::State& state) {
  Fixture f;
  TensorMap out;
  for (const char* name : {"gradExpandedXOut", "gradScalesOut"}) {
    out[name] = make_guarded(f.specs.at(name).dtype, f.specs.at(name).shape).tensor;
  }
  for (auto _ : state) benchmark::DoNotOptimize(emu::moe_finalize_routing_v2_grad::run(f.p, f.in, out, ""));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(f.in.at("gradY").nbytes() * 8));
}
BENCHMARK(BM_mfrg_emu)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace opgate
