// Reference vs emulator of IncreFlashAttentionV3 at a decode size: B = 4, N = 32, N2 = 8 (GQA 4),
// S = 32768, D = 128, fp16, page attention with blockSize 128 in the (blocknum, N2, blockSize, D)
// cache. Reports seconds per call and KV bytes read per second (key + value, 2 * B*N2*S*D*2 bytes).
#include <benchmark/benchmark.h>

#include "cases/incre_flash_attention_v3.h"
#include "core/guard.h"
#include "device/emu/incre_flash_attention_v3.h"
#include "device/layout/incre_flash_attention_v3.h"

namespace opgate {
namespace {

namespace ifa = cases::incre_flash_attention_v3;

constexpr int64_t kBatch = 4;
constexpr int64_t kSeq = 32768;

struct Fixture {
  ifa::Params p;
  TensorMap in, packed;
  int64_t kv_bytes = 0;
  Fixture() {
    auto pk = ifa::Builder()
                  .dtype(DType::kF16)
                  .batch(kBatch)
                  .heads(32, 8)
                  .head_dim(128)
                  .layout("BNSD")
                  .paged(128, true)
                  .lengths(std::vector<int64_t>(kBatch, kSeq))
                  .build();
    p = pk.first;
    in = ifa::fill(p, pk.second, ref::incre_flash_attention_v3::specs(p), FillMode::kRealistic, 1).value();
    packed = layout::incre_flash_attention_v3::pack(p, in);
    kv_bytes = static_cast<int64_t>(in.at("key").nbytes() + in.at("value").nbytes());
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

void BM_ifa_reference(benchmark::State& state) {
  const Fixture& f = fixture();
  for (auto _ : state) benchmark::DoNotOptimize(ref::incre_flash_attention_v3::reference(f.p, f.in));
  state.SetBytesProcessed(state.iterations() * f.kv_bytes);
}
BENCHMARK(BM_ifa_reference)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(2);

void BM_ifa_emu(benchmark::State& state) {
  const Fixture& f = fixture();
  const auto specs = ref::incre_flash_attention_v3::specs(f.p);
  TensorMap out;
  out["attentionOut"] = make_guarded(specs.at("attentionOut").dtype, specs.at("attentionOut").shape).tensor;
  for (auto _ : state) benchmark::DoNotOptimize(emu::incre_flash_attention_v3::run(f.p, f.packed, out, ""));
  state.SetBytesProcessed(state.iterations() * f.kv_bytes);
}
BENCHMARK(BM_ifa_emu)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(2);

}  // namespace
}  // namespace opgate
