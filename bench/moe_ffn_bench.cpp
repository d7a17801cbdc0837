// Reference vs emulator of MoeFFN at the size: M = 2048 tokens over E = 8 experts, K1 = 1024,
// N1 = 2816, fp16 high-performance path with biases and fastgelu. Useful flops: the two matmuls,
// 4 * M * K1 * N1 (the reference also runs a third product of that size for the tolerance
// magnitudes, sum |a| |W2| weights: 6 * M * K1 * N1 executed, printed as executed_GFLOP/s).
// frac_nofma is useful GFLOP/s over the no-FMA probe, which uses 256-bit vectors (bench_limits.cpp):
// on an AVX-512 machine with 512-bit multiply and add units the reference's own ceiling is higher. The peer: OpenBLAS cblas_dgemm on the same
// matrices (converted to double outside the timing), both matmuls of every expert, same threads.
// The int8 rows (reference vs emulator, same size, int8 -> fp16 with per-channel scale, int32
// biases): the emulator is what fuzzing runs, so its time is read against the reference's.
#include <benchmark/benchmark.h>

#include <vector>

#include "bench/bench_limits.h"
#include "cases/moe_ffn.h"
#include "core/guard.h"
#include "core/parallel.h"
#include "device/emu/moe_ffn.h"

#ifdef OPGATE_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace opgate {
namespace {

namespace mffn = cases::moe_ffn;

struct Fixture {
  mffn::Params p;
  SpecMap specs;
  TensorMap in;
  double flops = 0, bytes = 0;
  explicit Fixture(DType dtype) {
    auto b = mffn::Builder().dtype(dtype).tokens({256, 256, 256, 256, 256, 256, 256, 256}).k1(1024).n1(2816);
    if (dtype == DType::kI8) b.per_channel();
    auto pk = b.bias1().bias2().build();
    p = pk.first;
    specs = ref::moe_ffn::specs(p);
    in = mffn::fill(p, pk.second, specs, FillMode::kRealistic, 1).value();
    flops = 4.0 * static_cast<double>(p.m * p.k1 * p.n1);
    for (const auto& [name, t] : in) bytes += static_cast<double>(t.nbytes());
  }
};

const Fixture& fixture() {
  static const Fixture f(DType::kF16);
  return f;
}

const Fixture& fixture_i8() {
  static const Fixture f(DType::kI8);
  return f;
}

std::vector<double> as_double(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get(i);
  return v;
}

// Seconds of the two dgemms of every expert (h = x_e W1_e, y = h W2_e), best of 3; 0 without BLAS.
double dgemm_peer_seconds(const Fixture& f) {
#ifdef OPGATE_HAVE_OPENBLAS
  openblas_set_num_threads(static_cast<int>(math::threads()));
  const std::vector<double> x = as_double(f.in.at("x")), w1 = as_double(f.in.at("weight1")),
                            w2 = as_double(f.in.at("weight2"));
  const int64_t k1 = f.p.k1, n1 = f.p.n1;
  std::vector<double> h(static_cast<size_t>(f.p.m * n1)), y(static_cast<size_t>(f.p.m * k1));
  return bench::best_seconds(3, [&] {
    int64_t row = 0;
    for (size_t e = 0; e < f.p.expert_tokens.size(); ++e) {
      const auto rows = static_cast<int>(f.p.expert_tokens[e]);
      const auto ei = static_cast<int64_t>(e);
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, static_cast<int>(n1), static_cast<int>(k1), 1.0,
                  x.data() + row * k1, static_cast<int>(k1), w1.data() + ei * k1 * n1, static_cast<int>(n1), 0.0,
                  h.data() + row * n1, static_cast<int>(n1));
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, static_cast<int>(k1), static_cast<int>(n1), 1.0,
                  h.data() + row * n1, static_cast<int>(n1), w2.data() + ei * n1 * k1, static_cast<int>(k1), 0.0,
                  y.data() + row * k1, static_cast<int>(k1));
      row += rows;
    }
    benchmark::DoNotOptimize(y.data());
  });
#else
  (void)f;
  return 0;
#endif
}

void BM_mffn_reference(benchmark::State& state) {
  const Fixture& f = fixture();
  const double peer = dgemm_peer_seconds(f);
  bench::measure(state, f.bytes, f.flops, [&] { benchmark::DoNotOptimize(ref::moe_ffn::reference(f.p, f.in)); });
  state.counters["executed_GFLOP/s"] = 1.5 * state.counters["GFLOP/s"];
  if (state.counters["nofma_GFLOP/s"] > 0) {
    state.counters["frac_nofma"] = state.counters["GFLOP/s"] / state.counters["nofma_GFLOP/s"];
  }
  if (peer > 0) {
    state.counters["dgemm_s"] = peer;
    state.counters["dgemm_GFLOP/s"] = f.flops / peer * 1e-9;
    state.counters["x_dgemm"] = state.counters["s_per_call"] / peer;
  }
}
BENCHMARK(BM_mffn_reference)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(2);

void BM_mffn_emu(benchmark::State& state) {
  const Fixture& f = fixture();
  TensorMap out;
  out["y"] = make_guarded(f.specs.at("y").dtype, f.specs.at("y").shape).tensor;
  bench::measure(state, f.bytes, f.flops, [&] { benchmark::DoNotOptimize(emu::moe_ffn::run(f.p, f.in, out, "")); });
}
BENCHMARK(BM_mffn_emu)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(2);

void BM_mffn_reference_i8(benchmark::State& state) {
  const Fixture& f = fixture_i8();
  bench::measure(state, f.bytes, f.flops, [&] { benchmark::DoNotOptimize(ref::moe_ffn::reference(f.p, f.in)); });
}
BENCHMARK(BM_mffn_reference_i8)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(2);

void BM_mffn_emu_i8(benchmark::State& state) {
  const Fixture& f = fixture_i8();
  TensorMap out;
  out["y"] = make_guarded(f.specs.at("y").dtype, f.specs.at("y").shape).tensor;
  bench::measure(state, f.bytes, f.flops, [&] { benchmark::DoNotOptimize(emu::moe_ffn::run(f.p, f.in, out, "")); });
}
BENCHMARK(BM_mffn_emu_i8)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(2);

}  // namespace
}  // namespace opgate
