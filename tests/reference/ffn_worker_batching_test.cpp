// Tests of the FfnWorkerBatching reference (routing-ops.md §1): the spec's worked NORM vector, a
// hand-computed RECV poll, groupList edge rules, the validation codes of §1.7 and the data
// preconditions (its properties: tests/properties/ffn_worker_batching_props_test.cpp).
#include "reference/ffn_worker_batching.h"

#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "tests/reference/ffn_worker_batching_testing.h"

namespace opgate::ref::ffn_worker_batching {
namespace {

namespace examples = ffn_worker_batching_testing;

std::vector<double> values(const Tensor& t, int64_t n = -1) {
  std::vector<double> v;
  for (int64_t i = 0; i < (n < 0 ? t.numel() : n); ++i) v.push_back(t.get(i));
  return v;
}

// The spec's vector (§1.6): ids [2,0, 1,2 | 0,M, 3,2], sessions [3, 1]. Stable ascending order of
// the valid f: id 0 -> f 1, 4; id 1 -> f 2; id 2 -> f 0, 3, 7; id 3 -> f 6, so order = [1,4,2,0,3,7,6]
// and a = f / 4, bs = f % 4 / 2, k = f % 2.
TEST(FfnWorkerBatchingReference, spec_norm_vector) {
  const Params p = examples::norm_params();
  const TensorMap in = examples::norm_inputs();
  ASSERT_TRUE(validate(p, specs(p)).is_ok()) << validate(p, specs(p)).to_string();
  ASSERT_TRUE(check_data(p, in).is_ok()) << check_data(p, in).to_string();
  const RefOutputs r = reference(p, in);
  EXPECT_EQ(values(r.expected.at("actualTokenNum")), std::vector<double>{7});
  EXPECT_EQ(values(r.expected.at("groupList")), (std::vector<double>{0, 2, 1, 1, 2, 3, 3, 1}));  // no room for [0, 0]
  EXPECT_EQ(values(r.care.at("groupList")), std::vector<double>(8, 1.0));
  EXPECT_EQ(values(r.expected.at("sessionIds"), 7), (std::vector<double>{3, 1, 3, 3, 3, 1, 1}));
  EXPECT_EQ(values(r.expected.at("microBatchIds"), 7), std::vector<double>(7, 0));
  EXPECT_EQ(values(r.expected.at("tokenIds"), 7), (std::vector<double>{0, 0, 1, 0, 1, 1, 1}));
  EXPECT_EQ(values(r.expected.at("expertOffsets"), 7), (std::vector<double>{1, 0, 0, 0, 1, 1, 0}));
  // y row = payload s*100 + bs*10 + k of the slot: f1 (3,0,1), f4 (1,0,0), f2 (3,1,0), f0 (3,0,0), ...
  EXPECT_EQ(values(r.expected.at("y"), 7), (std::vector<double>{301, 100, 310, 300, 311, 111, 110}));
  // Y = A*BS*K = 16 rows; rows 7.. are undefined, and dynamicScale is never written for fp16.
  EXPECT_EQ(values(r.care.at("y")), (std::vector<double>{1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(values(r.care.at("dynamicScale")), std::vector<double>(16, 0.0));
  EXPECT_EQ(r.expected.count("scheduleContext"), 0u);  // NORM writes nothing back
}

// RECV poll of micro batch 1: s0 ids [5, MAX, 1], s1 ids [1, 0, 1e6]; f = s*3 + j (padding is
// masked, so it changes no position). Valid sorted: id 0 -> f 4; id 1 -> f 2, 3; id 5 -> f 0.
TEST(FfnWorkerBatchingReference, recv_poll_and_side_effects) {
  const Params p = examples::recv_params();
  const TensorMap in = examples::recv_inputs();
  ASSERT_TRUE(check_data(p, in).is_ok()) << check_data(p, in).to_string();
  const RefOutputs r = reference(p, in);
  EXPECT_EQ(values(r.expected.at("actualTokenNum")), std::vector<double>{4});
  EXPECT_EQ(values(r.expected.at("sessionIds"), 4), (std::vector<double>{1, 0, 1, 0}));
  EXPECT_EQ(values(r.expected.at("microBatchIds"), 4), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(values(r.expected.at("tokenIds"), 4), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(values(r.expected.at("expertOffsets"), 4), (std::vector<double>{1, 2, 0, 0}));
  EXPECT_EQ(values(r.expected.at("y"), 4), (std::vector<double>{1101, 1002, 1100, 1000}));
  // Groups [0,1], [1,2], [5,1], then [0,0]; rows 4 and 5 are not written.
  EXPECT_EQ(values(r.expected.at("groupList"), 8), (std::vector<double>{0, 1, 1, 2, 5, 1, 0, 0}));
  EXPECT_EQ(values(r.care.at("groupList")), (std::vector<double>{1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0}));
  // Column 1 of every session: flag 0, ids INT32_MAX, layer id kept; column 0 untouched.
  const double mx = 2147483647;
  EXPECT_EQ(values(r.expected.at("tokenInfoBuf")),
            (std::vector<double>{0, 7, 4, 4, 4, 0, 7, mx, mx, mx, 1, 8, 3, 3, 3, 0, 8, mx, mx, mx}));
  // polling_index (u64 at byte 416) goes from 1 to (1 + 1) % 2 = 0; every other byte is the input's.
  const Tensor& ctx = r.expected.at("scheduleContext");
  for (int64_t b = 0; b < 1024; ++b) EXPECT_EQ(ctx.get(b), b >= 416 && b < 424 ? 0.0 : in.at("scheduleContext").get(b));
}

// With nothing valid NORM's lister emits [<unread>, 0] then [0, 0]; RECV emits [0, 0] only.
TEST(FfnWorkerBatchingReference, all_masked_group_rows) {
  Params p = examples::norm_params();
  TensorMap in = examples::norm_inputs();
  for (int64_t i = 0; i < 8; ++i) in.at("expertIdsBuf").set(i, kMaskReset);
  RefOutputs r = reference(p, in);
  EXPECT_EQ(values(r.expected.at("actualTokenNum")), std::vector<double>{0});
  EXPECT_EQ(values(r.care.at("groupList")), (std::vector<double>{0, 1, 1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(values(r.expected.at("groupList")).at(1), 0);
  EXPECT_EQ(values(r.expected.at("groupList")).at(2), 0);
  EXPECT_EQ(values(r.care.at("y")), std::vector<double>(16, 0.0));
  p = examples::recv_params();
  in = examples::recv_inputs();
  for (int64_t w : {7, 9, 17, 18}) in.at("tokenInfoBuf").set(w, kMaskScheduler);
  r = reference(p, in);
  EXPECT_EQ(values(r.care.at("groupList")), (std::vector<double>{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(values(r.expected.at("groupList"), 2), (std::vector<double>{0, 0}));
}

// An id of exactly 1e6 is masked; 999999 is a valid id the kernel cannot list (>= expertNum).
TEST(FfnWorkerBatchingReference, mask_threshold_and_id_domain) {
  const Params p = examples::norm_params();
  TensorMap in = examples::norm_inputs();
  in.at("expertIdsBuf").set(5, static_cast<double>(kMaskThreshold));
  EXPECT_TRUE(check_data(p, in).is_ok());
  EXPECT_EQ(values(reference(p, in).expected.at("actualTokenNum")), std::vector<double>{7});
  for (double bad : {-1.0, 4.0, 999999.0}) {
    in.at("expertIdsBuf").set(5, bad);
    const Status st = check_data(p, in);
    EXPECT_EQ(st.code(), StatusCode::kInvalidCase) << bad;
    EXPECT_NE(st.message().find("expertIdsBuf[5]"), std::string::npos) << st.message();
  }
  // Beyond out_num the kernel reads nothing, so stale rows may hold anything.
  in = examples::norm_inputs();
  in.at("expertIdsBuf").set(12, -7);
  EXPECT_TRUE(check_data(p, in).is_ok());
  in.at("sessionIdsBuf").set(1, 4);  // A = 4
  EXPECT_EQ(check_data(p, in).code(), StatusCode::kInvalidCase);
}

TEST(FfnWorkerBatchingReference, recv_flag_not_ready_would_hang) {
  const Params p = examples::recv_params();
  for (double flag : {0.0, 2.0}) {
    TensorMap in = examples::recv_inputs();
    in.at("tokenInfoBuf").set(15, flag);  // session 1, micro batch 1
    const Status st = check_data(p, in);
    EXPECT_EQ(st.code(), StatusCode::kInvalidCase);
    EXPECT_NE(st.message().find("would hang"), std::string::npos) << st.message();
  }
}

struct Tampered {
  const char* what;
  std::function<void(Params&, SpecMap&)> edit;
};

void expect_code(int64_t code, StatusCode kind, const std::vector<Tampered>& calls) {
  for (const Tampered& c : calls) {
    Params p = examples::norm_params();
    p.max_out_shape = {2, 4, 3, 16};
    p.token_size = 32;
    SpecMap s = specs(p);
    c.edit(p, s);
    const Status st = validate(p, s);
    EXPECT_EQ(st.code(), kind) << c.what << ": " << st.to_string();
    EXPECT_EQ(st.aclnn_code(), code) << c.what << ": " << st.to_string();
  }
}

TEST(FfnWorkerBatchingReference, validate_codes) {
  expect_code(161001, StatusCode::kAclnnError,
              {{"null ctx", [](Params&, SpecMap& s) { s["scheduleContext"].present = false; }},
               {"no tokenIds", [](Params&, SpecMap& s) { s.erase("tokenIds"); }}});
  expect_code(161002, StatusCode::kAclnnError,
              {{"ctx u8", [](Params&, SpecMap& s) { s["scheduleContext"].dtype = DType::kU8; }},
               {"y f32", [](Params&, SpecMap& s) { s["y"].dtype = DType::kF32; }},
               {"groupList i32", [](Params&, SpecMap& s) { s["groupList"].dtype = DType::kI32; }},
               {"dynamicScale f16", [](Params&, SpecMap& s) { s["dynamicScale"].dtype = DType::kF16; }}});
  expect_code(561002, StatusCode::kAclnnError,
              {{"ctx 2-D", [](Params&, SpecMap& s) { s["scheduleContext"].shape = {32, 32}; }},
               {"expertNum 0", [](Params& p, SpecMap&) { p.expert_num = 0; }},
               {"expertNum 8193", [](Params& p, SpecMap&) { p.expert_num = 8193; }},
               {"shape len 3", [](Params& p, SpecMap&) { p.max_out_shape = {2, 4, 3}; }},
               {"A 1025", [](Params& p, SpecMap&) { p.max_out_shape[0] = 1025; }},
               {"K 65", [](Params& p, SpecMap&) { p.max_out_shape[2] = 65; }},
               {"H 0", [](Params& p, SpecMap&) { p.max_out_shape[3] = 0; }},
               {"tokenDtype 3", [](Params& p, SpecMap&) { p.token_dtype = 3; }},
               {"needSchedule -1", [](Params& p, SpecMap&) { p.need_schedule = -1; }},
               {"layerNum 5", [](Params& p, SpecMap&) { p.layer_num = 5; }}});
  // What the host does not check is a broken case, not a rejection.
  expect_code(0, StatusCode::kInvalidCase,
              {{"y int8 for fp16 tokens", [](Params&, SpecMap& s) { s["y"].dtype = DType::kI8; }},
               {"y rows", [](Params&, SpecMap& s) { s["y"].shape = {23, 16}; }},
               {"HS too small", [](Params& p, SpecMap&) { p.token_size = 31; }},
               {"outNum > A", [](Params& p, SpecMap&) { p.out_num = 3; }},
               {"polling index", [](Params& p, SpecMap&) { p.need_schedule = 1; p.polling_index = 1; }}});
  const Params ok = examples::norm_params();
  EXPECT_TRUE(validate(ok, specs(ok)).is_ok());
}

}  // namespace
}  // namespace opgate::ref::ffn_worker_batching
