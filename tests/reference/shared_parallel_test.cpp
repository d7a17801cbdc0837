// The project's one parallel loop (core/parallel.h), and the references that use it
// and the vector kernels: bit-identical outputs at 1, 2 and 7 threads and on every ISA path this
// CPU runs (the scalar path at 1 thread is the baseline).
#include "core/parallel.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <utility>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cases/ffn_worker_batching.h"
#include "cases/incre_flash_attention_v3.h"
#include "cases/moe_ffn.h"
#include "cases/moe_finalize_routing_v2_grad.h"
#include "reference/math/shared_simd.h"

namespace opgate::math {
namespace {

// Restores the process-wide settings a test changes.
struct Settings {
  Isa isa_before = isa();
  ~Settings() {
    set_threads(0);
    set_isa(isa_before);
  }
};

TEST(SharedParallel, EveryIndexRunsExactlyOnceAtAnyThreadCount) {
  Settings restore;
  for (int64_t t : {1, 2, 7}) {
    set_threads(t);
    EXPECT_EQ(threads(), t);
    for (int64_t n : {0, 1, 5, 100}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
      parallel_for(n, [&](int64_t i) { seen[static_cast<size_t>(i)]++; });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)].load(), 1) << "n " << n << " i " << i;
    }
  }
}

TEST(SharedParallel, NestedLoopsRunSeriallyInsideAWorker) {
  Settings restore;
  set_threads(3);
  std::vector<std::atomic<int>> seen(12 * 10);
  parallel_for(12, [&](int64_t i) {
    parallel_for(10, [&](int64_t j) { seen[static_cast<size_t>(i * 10 + j)]++; });
  });
  for (auto& s : seen) EXPECT_EQ(s.load(), 1);
}

TEST(SharedParallel, ThreadCountParsing) {
  EXPECT_EQ(parse_threads("3"), 3);
  EXPECT_EQ(parse_threads("4096"), 4096);
  for (const char* bad : {"", "0", "-2", "2x", "x", "4097"}) EXPECT_EQ(parse_threads(bad), -1) << bad;
  EXPECT_EQ(parse_threads(nullptr), -1);
  Settings restore;
  set_threads(5);
  EXPECT_EQ(threads(), 5);
  set_threads(0);
  EXPECT_GE(threads(), 1);
}

// Every byte of every tensor of a reference's outputs; f64 NaNs as one pattern (which NaN an
// operation propagates is outside IEEE 754's contract; see shared_simd_test.cpp).
std::string fingerprint(const RefOutputs& o) {
  std::string s;
  for (const TensorMap* m : {&o.expected, &o.magnitude, &o.care}) {
    for (const auto& [name, t] : *m) {
      s += name + ":" + shape_to_string(t.shape()) + ":";
      if (t.dtype() != DType::kF64) {
        s.append(reinterpret_cast<const char*>(t.data()), t.nbytes());
        continue;
      }
      for (int64_t i = 0; i < t.numel(); ++i) {
        const double v = std::isnan(t.ptr<double>()[i]) ? std::nan("") : t.ptr<double>()[i];
        s.append(reinterpret_cast<const char*>(&v), sizeof v);
      }
    }
    s += "|";
  }
  return s;
}

// Runs `ref` at 1 thread on the scalar path, then at 1, 2 and 7 threads on every supported path.
void expect_independent_of_threads_and_isa(const std::function<RefOutputs()>& ref, const char* what) {
  Settings restore;
  set_threads(1);
  set_isa(Isa::kScalar);
  const std::string base = fingerprint(ref());
  ASSERT_GT(base.size(), 1000u) << what << ": the case must produce data";
  for (Isa isa : supported_isas()) {
    set_isa(isa);
    for (int64_t t : {1, 2, 7}) {
      set_threads(t);
      EXPECT_TRUE(fingerprint(ref()) == base) << what << " differs at " << t << " threads on " << isa_name(isa);
    }
  }
}

TEST(SharedParallel, IncreFlashAttentionIsBitIdenticalAcrossThreadsAndIsa) {
  namespace ifa = cases::incre_flash_attention_v3;
  // fp16 paged GQA with mask and pse (D = 36: a lane tail), int8 KV with per-channel offsets, bf16
  // KV with G = 5 (a head-block remainder on every path) on adversarial data, and fp16 with G = 1
  // on exact data (scores far apart: tiny P, so the tail terms of every row count); lengths that
  // leave a partial 64-row tile and an empty row.
  const char* names[] = {"ifa fp16 paged", "ifa int8 kv", "ifa bf16 G=5 adversarial", "ifa fp16 G=1 exact"};
  for (int variant = 0; variant < 4; ++variant) {
    ifa::Builder b;
    b.batch(3).heads(8, 2).head_dim(36).layout("BNSD").lengths({700, 0, 333});
    FillMode mode = FillMode::kRealistic;
    if (variant == 0) b.dtype(DType::kF16).paged(64, true).mask().pse();
    if (variant == 1) b.dtype(DType::kBF16).kv_dtype(DType::kI8).seq(700).antiquant("per-channel", true);
    if (variant == 2) b.dtype(DType::kBF16).heads(10, 2).head_dim(128).seq(700).mask(), mode = FillMode::kAdversarial;
    if (variant == 3) b.dtype(DType::kF16).heads(3, 3).head_dim(64).seq(700).pse(), mode = FillMode::kExact;
    const auto pk = b.build();
    const auto in = ifa::fill(pk.first, pk.second, ref::incre_flash_attention_v3::specs(pk.first), mode,
                              7 + static_cast<uint64_t>(variant));
    ASSERT_TRUE(in.has_value()) << in.status().message();
    expect_independent_of_threads_and_isa([&] { return ref::incre_flash_attention_v3::reference(pk.first, in.value()); },
                                          names[variant]);
  }
}

TEST(SharedParallel, MoeFinalizeRoutingGradIsBitIdenticalAcrossThreadsAndIsa) {
  namespace mfrg = cases::moe_finalize_routing_v2_grad;
  // K = 5 (a partial group of 8 slots), H = 300 (a partial 256-column tile), drops and bias.
  const auto pk = mfrg::Builder().dtype(DType::kBF16).rows(9).top_k(5).hidden(300).scales().bias().drop_pad(8, 5).build();
  const auto in = mfrg::fill(pk.first, pk.second, ref::moe_finalize_routing_v2_grad::specs(pk.first),
                             FillMode::kRealistic, 3);
  ASSERT_TRUE(in.has_value()) << in.status().message();
  expect_independent_of_threads_and_isa([&] { return ref::moe_finalize_routing_v2_grad::reference(pk.first, in.value()); },
                                        "mfrg");
}

TEST(SharedParallel, MoeFinalizeRoutingGradWithoutSlotsOrColumns) {
  // K = 0 (no slots: a shrinker's corner) and H = 0 produce empty or all-zero outputs, no crash.
  namespace mrg = ref::moe_finalize_routing_v2_grad;
  for (const auto& [k, h] : {std::pair<int64_t, int64_t>{0, 4}, {2, 0}}) {
    mrg::Params p;
    p.num_rows = 3;
    p.top_k = k;
    p.hidden = h;
    p.dtype = DType::kBF16;
    p.has_scales = true;
    TensorMap in;
    for (const auto& [name, spec] : mrg::specs(p)) {
      if (spec.present) in[name] = Tensor::zeros(spec.dtype, spec.shape);
    }
    const RefOutputs out = mrg::reference(p, in);
    const Tensor& gs = out.expected.at("gradScalesOut");
    EXPECT_EQ(gs.numel(), 3 * k);
    for (int64_t i = 0; i < gs.numel(); ++i) EXPECT_EQ(gs.get(i), 0.0);
  }
}

TEST(SharedParallel, MoeFfnIsBitIdenticalAcrossThreadsAndIsa) {
  namespace mffn = cases::moe_ffn;
  // Three experts (one of 300 rows: a full 256-row task and a partial one), N1 = 45 (a ragged
  // 8-column panel), K1 = 150 (a partial 128-deep k block), biases.
  const auto pk = mffn::Builder().tokens({300, 0, 17}).k1(150).n1(45).bias1().bias2().build();
  const auto in = mffn::fill(pk.first, pk.second, ref::moe_ffn::specs(pk.first), FillMode::kRealistic, 9);
  ASSERT_TRUE(in.has_value()) << in.status().message();
  expect_independent_of_threads_and_isa([&] { return ref::moe_ffn::reference(pk.first, in.value()); }, "mffn");
}

TEST(SharedParallel, FfnWorkerBatchingIsBitIdenticalAcrossThreads) {
  namespace fwb = cases::ffn_worker_batching;
  const auto pk = fwb::Builder().shape(8, 16, 4, 96).token_dtype(1).experts(16).mask(0.3).build();
  const auto in = fwb::fill(pk.first, pk.second, ref::ffn_worker_batching::input_specs(pk.first),
                            FillMode::kRealistic, 5);
  ASSERT_TRUE(in.has_value()) << in.status().message();
  expect_independent_of_threads_and_isa([&] { return ref::ffn_worker_batching::reference(pk.first, in.value()); },
                                        "fwb");
}

}  // namespace
}  // namespace opgate::math
