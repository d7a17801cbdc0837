// Properties of FfnWorkerBatching (suite FfnWorkerBatchingProps): the reference over the
// operator's generator (through a RapidCheck Chooser) — rows are a permutation of the valid slots,
// groups carry one expert and sum to actualTokenNum, the sort is stable, NORM and RECV agree — and
// the memory images of routing-ops.md §1.2, §1.3 round-trip through build/parse and pack/parse.
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "cases/ffn_worker_batching.h"
#include "device/layout/ffn_worker_batching.h"
#include "reference/ffn_worker_batching.h"
#include "tests/cases/rc_chooser.h"

namespace opgate::ref::ffn_worker_batching {
namespace {

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

namespace opgate::layout::ffn_worker_batching {
namespace {

RC_GTEST_PROP(FfnWorkerBatchingProps, context_build_parse_is_identity, ()) {
  ScheduleContext c;
  for (const ContextField& f : context_fields()) {
    const uint64_t v = *rc::gen::arbitrary<uint64_t>();
    c.*f.member = f.bytes == 8 ? v : v & 0xFFFFFFFFu;
  }
  RC_ASSERT(parse_context(build_context(c)) == c);
}

RC_GTEST_PROP(FfnWorkerBatchingProps, token_data_pack_parse_is_identity, ()) {
  const int64_t dtype = *rc::gen::inRange<int64_t>(0, 3);
  const auto dim = [](int64_t hi) { return *rc::gen::inRange<int64_t>(1, hi + 1); };
  auto b = cases::ffn_worker_batching::Builder().shape(dim(3), dim(3), dim(3), dim(40)).micro_batches(dim(3));
  b.token_dtype(dtype);
  const Params p0 = b.build().first;
  b.token_size(ref::ffn_worker_batching::payload_bytes(p0) + *rc::gen::inRange<int64_t>(0, 40));
  const auto [p, k] = b.build();
  const auto in = cases::ffn_worker_batching::fill(p, k, ref::ffn_worker_batching::specs(p), FillMode::kAdversarial,
                                                   *rc::gen::inRange<uint64_t>(0, 1000));
  RC_ASSERT(in.has_value());
  const TensorMap images = pack(p, *in);
  const TensorMap back = parse_token_data(p, images.at("tokenDataBuf"));
  RC_ASSERT(back.at("tokens").bytes_equal(in->at("tokens")));
  RC_ASSERT((dtype == 2) == (back.count("tokenScales") == 1));
  if (dtype == 2) RC_ASSERT(back.at("tokenScales").bytes_equal(in->at("tokenScales")));
  RC_ASSERT(parse_context(images.at("scheduleContext")) == context_of(p));
}

}  // namespace
}  // namespace opgate::layout::ffn_worker_batching
