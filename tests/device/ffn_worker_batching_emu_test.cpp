// Tests of the FfnWorkerBatching kernel emulation (routing-ops.md §1.5): the spec's vector on packed
// images, RECV's in-place side effects, what each group-listing path leaves in the undefined rows,
// the RECV hang and unbound pointers. (Generated cases run through the whole pipeline in
// tests/cases/generated_cases_test.cpp.)
#include "device/emu/ffn_worker_batching.h"

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cases/ffn_worker_batching.h"
#include "core/guard.h"
#include "device/layout/ffn_worker_batching.h"
#include "tests/reference/ffn_worker_batching_testing.h"

namespace opgate::emu::ffn_worker_batching {
namespace {

namespace fwb_ref = ref::ffn_worker_batching;
namespace fwb_layout = layout::ffn_worker_batching;
namespace examples = ffn_worker_batching_testing;

struct EmuRun {
  Status status;
  TensorMap in;   // packed inputs after the run
  TensorMap out;  // output images (poisoned before the run)
  std::vector<GuardedBuffer> buffers;
};

// Packs canonical inputs (with the context their params describe) and runs the emu on guarded,
// poisoned output buffers, as the runner does.
EmuRun run_packed(const fwb_ref::Params& p, TensorMap canonical, const std::string& defect = "") {
  canonical["scheduleContext"] = fwb_layout::build_context(fwb_layout::context_of(p));
  EmuRun r;
  r.in = fwb_layout::pack(p, canonical);
  for (const auto& [name, spec] : fwb_layout::output_images(p, fwb_ref::specs(p))) {
    r.buffers.push_back(make_guarded(spec.dtype, spec.shape));
    r.out[name] = r.buffers.back().tensor;
  }
  r.status = run(p, r.in, r.out, defect);
  for (const GuardedBuffer& b : r.buffers) EXPECT_EQ(check_guards(b), "");
  return r;
}

std::vector<double> values(const Tensor& t, int64_t from, int64_t to) {
  std::vector<double> v;
  for (int64_t i = from; i < to; ++i) v.push_back(t.get(i));
  return v;
}

bool is_poison(const Tensor& t, int64_t i) { return t.bits(i) == poison_bits(t.dtype()); }

// Same vector as the reference test: order f = [1,4,2,0,3,7,6] (routing-ops.md §1.6).
TEST(FfnWorkerBatchingEmu, spec_norm_vector) {
  const EmuRun r = run_packed(examples::norm_params(), examples::norm_inputs());
  ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_EQ(values(r.out.at("actualTokenNum"), 0, 1), std::vector<double>{7});
  EXPECT_EQ(values(r.out.at("groupList"), 0, 8), (std::vector<double>{0, 2, 1, 1, 2, 3, 3, 1}));
  EXPECT_EQ(values(r.out.at("sessionIds"), 0, 7), (std::vector<double>{3, 1, 3, 3, 3, 1, 1}));
  EXPECT_EQ(values(r.out.at("tokenIds"), 0, 7), (std::vector<double>{0, 0, 1, 0, 1, 1, 1}));
  EXPECT_EQ(values(r.out.at("expertOffsets"), 0, 7), (std::vector<double>{1, 0, 0, 0, 1, 1, 0}));
  EXPECT_EQ(values(r.out.at("y"), 0, 7), (std::vector<double>{301, 100, 310, 300, 311, 111, 110}));
  for (int64_t i = 7; i < 16; ++i) EXPECT_TRUE(is_poison(r.out.at("y"), i)) << "row " << i << " written";
  for (int64_t i = 0; i < 16; ++i) EXPECT_TRUE(is_poison(r.out.at("dynamicScale"), i)) << i;
}

TEST(FfnWorkerBatchingEmu, recv_updates_context_and_token_info_in_place) {
  const fwb_ref::Params p = examples::recv_params();
  const EmuRun r = run_packed(p, examples::recv_inputs());
  ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_EQ(values(r.out.at("expertOffsets"), 0, 4), (std::vector<double>{1, 2, 0, 0}));
  EXPECT_EQ(values(r.out.at("microBatchIds"), 0, 4), (std::vector<double>{1, 1, 1, 1}));
  // [0,1], [1,2], [5,1], [0,0]; rows 4 and 5 keep the buffer's contents.
  EXPECT_EQ(values(r.out.at("groupList"), 0, 8), (std::vector<double>{0, 1, 1, 2, 5, 1, 0, 0}));
  for (int64_t i = 8; i < 12; ++i) EXPECT_TRUE(is_poison(r.out.at("groupList"), i)) << i;
  const fwb_layout::ScheduleContext after = fwb_layout::parse_context(r.out.at("scheduleContext"));
  EXPECT_EQ(after.polling_index, 0u);   // (1 + 1) % 2
  EXPECT_EQ(after.token_info_buf, 1u);  // the emu's handle for tokenInfoBuf
  const double mx = 2147483647;
  EXPECT_EQ(values(r.out.at("tokenInfoBuf"), 0, 20),
            (std::vector<double>{0, 7, 4, 4, 4, 0, 7, mx, mx, mx, 1, 8, 3, 3, 3, 0, 8, mx, mx, mx}));
  // The input images are what the caller passed.
  EXPECT_EQ(fwb_layout::parse_context(r.in.at("scheduleContext")).polling_index, 1u);
  EXPECT_EQ(r.in.at("tokenInfoBuf").get(5), 1.0);
}

// At most 512 valid tokens NORM lists groups on one core and writes only the compact rows plus
// [0, 0]; above 512 it copies the whole expertNum x 2 UB buffer, stale rows included.
TEST(FfnWorkerBatchingEmu, group_list_tail_per_path) {
  for (int64_t tokens : {512, 513}) {
    const auto [p, k] = cases::ffn_worker_batching::Builder()
                            .shape(tokens == 512 ? 8 : 3, tokens == 512 ? 64 : 19, tokens == 512 ? 1 : 9, 2)
                            .experts(64)
                            .used_experts(4)
                            .build();
    auto in = cases::ffn_worker_batching::fill(p, k, fwb_ref::specs(p), FillMode::kExact, 7);
    ASSERT_TRUE(in.has_value());
    const EmuRun r = run_packed(p, *in);
    ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
    ASSERT_EQ(r.out.at("actualTokenNum").get(0), static_cast<double>(tokens));
    const Tensor& gl = r.out.at("groupList");
    EXPECT_EQ(values(gl, 8, 10), (std::vector<double>{0, 0})) << "terminator after 4 groups";
    int64_t poisoned = 0;
    for (int64_t i = 10; i < gl.numel(); ++i) poisoned += is_poison(gl, i);
    EXPECT_EQ(poisoned, tokens == 512 ? gl.numel() - 10 : 0) << tokens << " tokens";
  }
}

// With nothing valid NORM emits [<unloaded UB>, 0] and [0, 0]; RECV emits [0, 0].
TEST(FfnWorkerBatchingEmu, all_masked_group_rows) {
  TensorMap in = examples::norm_inputs();
  for (int64_t i = 0; i < 8; ++i) in.at("expertIdsBuf").set(i, fwb_ref::kMaskReset);
  EmuRun r = run_packed(examples::norm_params(), in);
  ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_FALSE(is_poison(r.out.at("groupList"), 0));
  EXPECT_EQ(values(r.out.at("groupList"), 1, 4), (std::vector<double>{0, 0, 0}));
  EXPECT_TRUE(is_poison(r.out.at("groupList"), 4));
  EXPECT_TRUE(is_poison(r.out.at("y"), 0));
  in = examples::recv_inputs();
  for (int64_t w : {7, 9, 17, 18}) in.at("tokenInfoBuf").set(w, fwb_ref::kMaskScheduler);
  r = run_packed(examples::recv_params(), in);
  ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
  EXPECT_EQ(values(r.out.at("groupList"), 0, 2), (std::vector<double>{0, 0}));
  EXPECT_TRUE(is_poison(r.out.at("groupList"), 2));
}

TEST(FfnWorkerBatchingEmu, recv_flag_not_ready_would_spin) {
  TensorMap in = examples::recv_inputs();
  in.at("tokenInfoBuf").set(15, 0);
  const EmuRun r = run_packed(examples::recv_params(), in);
  EXPECT_EQ(r.status.code(), StatusCode::kInvalidCase);
  EXPECT_NE(r.status.message().find("spin forever"), std::string::npos) << r.status.message();
}

TEST(FfnWorkerBatchingEmu, unbound_pointer_is_a_backend_error) {
  const fwb_ref::Params p = examples::norm_params();
  TensorMap canonical = examples::norm_inputs();
  canonical["scheduleContext"] = fwb_layout::build_context(fwb_layout::context_of(p));
  TensorMap in = fwb_layout::pack(p, canonical);
  in.erase("sessionIdsBuf");
  TensorMap out;
  for (const auto& [name, spec] : fwb_layout::output_images(p, fwb_ref::specs(p))) {
    out[name] = Tensor::zeros(spec.dtype, spec.shape);
  }
  const Status st = run(p, in, out, "");
  EXPECT_EQ(st.code(), StatusCode::kBackendError);
  EXPECT_NE(st.message().find("ffn.session_ids_buf"), std::string::npos) << st.message();
  EXPECT_EQ(run(p, in, out, "fwb.no_such_defect").code(), StatusCode::kInternal);
}

TEST(FfnWorkerBatchingEmu, defect_catalogue_is_named_and_distinct) {
  std::set<std::string> names;
  for (const DefectInfo& d : defects()) {
    EXPECT_EQ(d.name.rfind("fwb.", 0), 0u) << d.name;
    EXPECT_FALSE(d.description.empty()) << d.name;
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
  }
  EXPECT_GE(names.size(), 6u);
}

}  // namespace
}  // namespace opgate::emu::ffn_worker_batching
