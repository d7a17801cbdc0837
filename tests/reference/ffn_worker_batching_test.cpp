// Tests of the FfnWorkerBatching reference (routing-ops.md §1): the spec's worked NORM vector, a
// hand-computed RECV poll, groupList edge rules, the validation codes of §1.7, the data
// preconditions, and properties over the operator's generator (through a RapidCheck Chooser).
#include "reference/ffn_worker_batching.h"

#include <functional>
#include <map>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "cases/ffn_worker_batching.h"
#include "tests/cases/rc_chooser.h"
#include "tests/device/ffn_worker_batching_examples.h"

namespace opgate::ref::ffn_worker_batching {
namespace {

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

struct Generated {
  Params p;
  TensorMap in;
  RefOutputs r;
};

// A problem from the operator's generator; `recv` turns it into a RECV poll of the same shape.
Generated generated(bool recv = false) {
  testing::RcChooser chooser;
  nlohmann::json j = cases::ffn_worker_batching::generate(chooser);
  if (recv) {
    j["needSchedule"] = 1;
    j["pollingIndex"] = *rc::gen::inRange<int64_t>(0, j["microBatchNum"].get<int64_t>());
  }
  auto pk = cases::ffn_worker_batching::from_json(j);
  RC_ASSERT(pk.has_value());
  Generated g;
  g.p = pk->first;
  RC_ASSERT(validate(g.p, specs(g.p)).is_ok());
  const uint64_t seed = *rc::gen::inRange<uint64_t>(0, 1000);
  auto in = cases::ffn_worker_batching::fill(g.p, pk->second, specs(g.p), FillMode::kExact, seed);
  RC_ASSERT(in.has_value());
  g.in = *in;
  RC_ASSERT(check_data(g.p, g.in).is_ok());
  g.r = reference(g.p, g.in);
  RC_CLASSIFY(is_recv(g.p), "recv");
  RC_CLASSIFY(g.r.expected.at("actualTokenNum").get(0) > 512, "over 512 tokens");
  return g;
}

using Slot = std::tuple<int64_t, int64_t, int64_t, int64_t>;  // (s, m, bs, k)

// Valid slots straight from the input buffers, each with its id and flattened position.
std::map<Slot, std::pair<int64_t, int64_t>> valid_slots(const Params& p, const TensorMap& in) {
  const Dims d = dims(p);
  const int64_t bsk = d.bs * d.k;
  std::map<Slot, std::pair<int64_t, int64_t>> out;
  for (int64_t a = 0; a < (is_recv(p) ? d.a : p.out_num); ++a) {
    for (int64_t j = 0; j < bsk; ++j) {
      const double id = is_recv(p)
                            ? in.at("tokenInfoBuf").get((a * p.micro_batch_num + p.polling_index) * (2 + bsk) + 2 + j)
                            : in.at("expertIdsBuf").get(a * bsk + j);
      if (id >= static_cast<double>(kMaskThreshold)) continue;
      const auto s = static_cast<int64_t>(is_recv(p) ? a : in.at("sessionIdsBuf").get(a));
      const auto m = static_cast<int64_t>(is_recv(p) ? p.polling_index : in.at("microBatchIdsBuf").get(a));
      out[{s, m, j / d.k, j % d.k}] = {static_cast<int64_t>(id), a * bsk + j};
    }
  }
  return out;
}

Slot row_slot(const RefOutputs& r, int64_t i) {
  const auto v = [&](const char* n) { return static_cast<int64_t>(r.expected.at(n).get(i)); };
  return {v("sessionIds"), v("microBatchIds"), v("tokenIds"), v("expertOffsets")};
}

RC_GTEST_PROP(FfnWorkerBatchingProps, rows_are_a_permutation_of_the_valid_slots, ()) {
  const Generated g = generated();
  const auto valid = valid_slots(g.p, g.in);
  const auto actual = static_cast<int64_t>(g.r.expected.at("actualTokenNum").get(0));
  RC_ASSERT(actual == static_cast<int64_t>(valid.size()));
  std::map<Slot, int> seen;
  const Dims d = dims(g.p);
  for (int64_t i = 0; i < actual; ++i) {
    const Slot s = row_slot(g.r, i);
    RC_ASSERT(valid.count(s) == 1u);
    RC_ASSERT(++seen[s] == 1);
    const auto [sess, m, bs, k] = s;
    const int64_t t = ((sess * g.p.micro_batch_num + m) * d.bs + bs) * d.k + k;
    for (int64_t j = 0; j < d.h; ++j) {
      RC_ASSERT(g.r.expected.at("y").bits(i * d.h + j) == g.in.at("tokens").bits(t * d.h + j));
    }
  }
}

RC_GTEST_PROP(FfnWorkerBatchingProps, groups_carry_one_expert_and_sum_to_actual, ()) {
  const Generated g = generated();
  const auto valid = valid_slots(g.p, g.in);
  const auto actual = static_cast<int64_t>(g.r.expected.at("actualTokenNum").get(0));
  const Tensor& gl = g.r.expected.at("groupList");
  int64_t row = 0, start = 0, last = -1;
  for (; row < g.p.expert_num && start < actual; ++row) {
    const auto id = static_cast<int64_t>(gl.get(2 * row));
    const auto count = static_cast<int64_t>(gl.get(2 * row + 1));
    RC_ASSERT(id > last);
    RC_ASSERT(count > 0);
    for (int64_t i = start; i < start + count; ++i) RC_ASSERT(valid.at(row_slot(g.r, i)).first == id);
    last = id;
    start += count;
  }
  RC_ASSERT(start == actual);
  if (row < g.p.expert_num && actual > 0) {
    RC_ASSERT(gl.get(2 * row) == 0.0);
    RC_ASSERT(gl.get(2 * row + 1) == 0.0);
  }
}

RC_GTEST_PROP(FfnWorkerBatchingProps, sort_is_stable, ()) {
  const Generated g = generated();
  const auto valid = valid_slots(g.p, g.in);
  const auto actual = static_cast<int64_t>(g.r.expected.at("actualTokenNum").get(0));
  for (int64_t i = 1; i < actual; ++i) {
    const auto prev = valid.at(row_slot(g.r, i - 1));
    const auto cur = valid.at(row_slot(g.r, i));
    RC_ASSERT(prev.first < cur.first || (prev.first == cur.first && prev.second < cur.second));
  }
}

// NORM with out_num = A, slot a = (session a, micro batch p) and the polled ids copied into
// expert_ids_buf batches exactly what RECV batches from token_info_buf.
RC_GTEST_PROP(FfnWorkerBatchingProps, norm_and_recv_agree_on_the_same_routing, ()) {
  const Generated g = generated(true);
  const Dims d = dims(g.p);
  const int64_t bsk = d.bs * d.k;
  Params norm = g.p;
  norm.need_schedule = 0;
  norm.out_num = d.a;
  TensorMap in = g.in;
  in["sessionIdsBuf"] = Tensor::zeros(DType::kI32, {d.a});
  in["microBatchIdsBuf"] = Tensor::full(DType::kI32, {d.a}, static_cast<double>(g.p.polling_index));
  in["expertIdsBuf"] = Tensor::zeros(DType::kI32, {d.a * bsk});
  for (int64_t a = 0; a < d.a; ++a) {
    in.at("sessionIdsBuf").set(a, static_cast<double>(a));
    for (int64_t j = 0; j < bsk; ++j) {
      const int64_t word = (a * g.p.micro_batch_num + g.p.polling_index) * (2 + bsk) + 2 + j;
      in.at("expertIdsBuf").set(a * bsk + j, g.in.at("tokenInfoBuf").get(word));
    }
  }
  RC_ASSERT(check_data(norm, in).is_ok());
  const RefOutputs n = reference(norm, in);
  for (const auto& [name, want] : g.r.expected) {
    if (name == "scheduleContext" || name == "tokenInfoBuf") continue;
    const Tensor& care = g.r.care.count(name) ? g.r.care.at(name) : Tensor();
    const Tensor& ncare = n.care.count(name) ? n.care.at(name) : Tensor();
    for (int64_t i = 0; i < want.numel(); ++i) {
      if ((care.defined() && care.get(i) == 0) || (ncare.defined() && ncare.get(i) == 0)) continue;
      RC_ASSERT(n.expected.at(name).bits(i) == want.bits(i));
    }
  }
}

}  // namespace
}  // namespace opgate::ref::ffn_worker_batching
