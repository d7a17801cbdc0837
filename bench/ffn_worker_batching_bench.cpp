// Reference vs emulator of FfnWorkerBatching (NORM) at A = 32 sessions, BS = 16, K = 8, H = 7168,
// bf16, 256 experts, 20 % masked slots; and a memcpy of the payload both move (the peer:
// the reference should stay within 10x of it). Bytes: the valid token rows read + written.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "bench/bench_limits.h"
#include "cases/ffn_worker_batching.h"
#include "core/guard.h"
#include "device/emu/ffn_worker_batching.h"
#include "device/layout/ffn_worker_batching.h"

namespace opgate {
namespace {

namespace fwb = cases::ffn_worker_batching;
namespace fwb_ref = ref::ffn_worker_batching;
namespace fwb_layout = layout::ffn_worker_batching;

struct Fixture {
  fwb_ref::Params p;
  TensorMap in, packed;
  double payload = 0;  // bytes of the valid rows (copied once: read + write = 2x)
  Fixture() {
    auto pk = fwb::Builder().shape(32, 16, 8, 7168).token_dtype(1).experts(256).mask(0.2).hot(0.1).build();
    p = pk.first;
    in = fwb::fill(p, pk.second, fwb_ref::input_specs(p), FillMode::kRealistic, 1).value();
    TensorMap canonical = in;
    canonical["scheduleContext"] = fwb_layout::build_context(fwb_layout::context_of(p));
    packed = fwb_layout::pack(p, canonical);
    const auto rows = static_cast<double>(fwb_ref::batch_order(p, in).size());
    payload = rows * static_cast<double>(p.max_out_shape[3] * 2);
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

void BM_fwb_reference(benchmark::State& state) {
  const Fixture& f = fixture();
  // The peer: one memcpy of the same payload, best of 5, in this process.
  std::vector<char> src(static_cast<size_t>(f.payload), 1), dst(src.size());
  const double memcpy_s = bench::best_seconds(5, [&] {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::DoNotOptimize(dst.data());
  });
  // A second peer that, like any function returning new tensors, first-touches fresh memory for
  // its output: allocate (zeroed), then copy. On this VM page faults cost more than the copy.
  const double fresh_s = bench::best_seconds(5, [&] {
    std::vector<char> out(src.size());
    std::memcpy(out.data(), src.data(), src.size());
    benchmark::DoNotOptimize(out.data());
  });
  bench::measure(state, 2 * f.payload, 0, [&] { benchmark::DoNotOptimize(fwb_ref::reference(f.p, f.in)); });
  state.counters["memcpy_s"] = memcpy_s;
  state.counters["x_memcpy"] = state.counters["s_per_call"] / memcpy_s;
  state.counters["fresh_memcpy_s"] = fresh_s;
  state.counters["x_fresh_memcpy"] = state.counters["s_per_call"] / fresh_s;
}
BENCHMARK(BM_fwb_reference)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(5);

void BM_fwb_emu(benchmark::State& state) {
  const Fixture& f = fixture();
  std::vector<GuardedBuffer> buffers;
  TensorMap out;
  for (const auto& [name, spec] : fwb_layout::output_images(f.p, fwb_ref::specs(f.p))) {
    buffers.push_back(make_guarded(spec.dtype, spec.shape));
    out[name] = buffers.back().tensor;
  }
  TensorMap in = f.packed;
  bench::measure(state, 2 * f.payload, 0,
                 [&] { benchmark::DoNotOptimize(emu::ffn_worker_batching::run(f.p, in, out, "")); });
}
BENCHMARK(BM_fwb_emu)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(5);

}  // namespace
}  // namespace opgate
