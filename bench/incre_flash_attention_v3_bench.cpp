// Reference vs emulator of IncreFlashAttentionV3 at a decode size: B = 4, N = 32, N2 = 8 (GQA 4),
// S = 32768, D = 128, fp16, page attention with blockSize 128 in the (blocknum, N2, blockSize, D)
// cache. Bytes: key + value read (2 * B*N2*S*D*2); flops: QK^T and PV, 4 * B*N*S*D.
#include <benchmark/benchmark.h>

#include "bench/bench_limits.h"
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
  double kv_bytes = 0, flops = 0;
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
    kv_bytes = static_cast<double>(in.at("key").nbytes() + in.at("value").nbytes());
    flops = 4.0 * static_cast<double>(kBatch * p.num_heads * kSeq * p.head_dim);
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

void BM_ifa_reference(benchmark::State& state) {
  const Fixture& f = fixture();
  bench::measure(state, f.kv_bytes, f.flops,
                 [&] { benchmark::DoNotOptimize(ref::incre_flash_attention_v3::reference(f.p, f.in)); });
}
BENCHMARK(BM_ifa_reference)->Unit(benchmark::kSecond)->UseManualTime()->Iterations(3);

void BM_ifa_emu(benchmark::State& state) {
  const Fixture& f = fixture();
  const auto specs = ref::incre_flash_attention_v3::specs(f.p);
  TensorMap out;
  out["attentionOut"] = make_guarded(specs.at("attentionOut").dtype, specs.at("attentionOut").shape).tensor;
  bench::measure(state, f.kv_bytes, f.flops,
                 [&] { benchmark::DoNotOptimize(emu::incre_flash_attention_v3::run(f.p, f.packed, out, "")); });
}
BENCHMARK(BM_ifa_emu)->Unit(benchmark::kSecond)->UseManualTime()->Iterations(2);

}  // namespace
}  // namespace opgate
