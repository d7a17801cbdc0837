// Cases of aclnnFfnWorkerBatching: the JSON binding of its params, the routing generator, the
// fills and the compare plan (cases/ffn_worker_batching/README.md explains each choice).
#pragma once

#include <cstdint>
#include <utility>

#include <nlohmann/json.hpp>

#include "cases/chooser.h"
#include "core/compare.h"
#include "core/op_registry.h"
#include "core/problem.h"
#include "reference/ffn_worker_batching.h"

namespace opgate::cases::ffn_worker_batching {

using Params = ref::ffn_worker_batching::Params;

// How the routing is generated; does not change the call.
struct Knobs {
  double mask_rate = 0.0;  // share of entries masked
  int64_t mask_value = 0;  // the masked id written; 0 = a mix of 0x7F7F7F7F, INT32_MAX and 1000000
  double hot_rate = 0.0;   // share of unmasked entries routed to the last expert of their layer
  int64_t used_experts = 0;  // distinct local ids per layer, spread with gaps (0 = all)
  bool operator==(const Knobs& o) const {
    return mask_rate == o.mask_rate && mask_value == o.mask_value && hot_rate == o.hot_rate &&
           used_experts == o.used_experts;
  }
};

const OpInfo& op_info();

// {"expertNum","maxOutShape","tokenDtype","needSchedule","layerNum","microBatchNum",
//  "attnToFfnTokenSize","outNum","pollingIndex","maskRate","maskValue","hotRate","usedExperts"};
// strict: unknown keys and out-of-range values are errors naming the key. Defaults:
// attnToFfnTokenSize = the payload bytes, outNum = A in NORM mode.
Expected<std::pair<Params, Knobs>> from_json(const nlohmann::json& j);
nlohmann::json to_json(const Params& p, const Knobs& k);

// A valid problem drawn through the Chooser: mostly small; a sixth are wide (BS*K >= 288 per
// session), which batch more than 512 tokens, NORM's multi-core group-listing path, once A or the
// size grows.
nlohmann::json generate(Chooser& c);

// Canonical inputs (ref::input_specs) from the seed. Routing from the knobs, packed per layer as
// layer_id * (expertNum / layerNum) + id when layerNum > 1. Payload per mode: exact = small
// integers and power-of-two scales; realistic = normal activations, int8 per-token quantised with
// its amax/127 scale; adversarial = bit patterns a float conversion would change (NaN payloads,
// signed zeros, subnormals, infinities).
Expected<TensorMap> fill(const Params& p, const Knobs& k, const SpecMap& specs, FillMode mode, uint64_t seed);

ComparePlan compare_plan(const Params& p, const RefOutputs& ref, FillMode mode);

// "row 5: expert 3 <- session 1, micro batch 0, token 2, slot 1" and the like.
std::string describe(const Params& p, const std::string& output, const std::vector<int64_t>& index,
                     const TensorMap& inputs);

// Fluent construction for tests: Builder().shape(2, 4, 3, 16).experts(8).recv(0).build().
class Builder {
 public:
  Builder& shape(int64_t a, int64_t bs, int64_t k, int64_t h) { p_.max_out_shape = {a, bs, k, h}; return *this; }
  Builder& token_dtype(int64_t t) { p_.token_dtype = t; return *this; }
  Builder& experts(int64_t e) { p_.expert_num = e; return *this; }
  Builder& layers(int64_t l) { p_.layer_num = l; return *this; }
  Builder& micro_batches(int64_t m) { p_.micro_batch_num = m; return *this; }
  Builder& token_size(int64_t hs) { token_size_ = hs; return *this; }
  Builder& norm(int64_t out_num) { p_.need_schedule = 0; out_num_ = out_num; return *this; }
  Builder& recv(int64_t polling_index) { p_.need_schedule = 1; p_.polling_index = polling_index; return *this; }
  Builder& mask(double rate, int64_t value = 0) { k_.mask_rate = rate; k_.mask_value = value; return *this; }
  Builder& hot(double rate) { k_.hot_rate = rate; return *this; }
  Builder& used_experts(int64_t n) { k_.used_experts = n; return *this; }
  // Resolves the derived defaults: HS = the payload bytes, outNum = A (NORM).
  std::pair<Params, Knobs> build() const {
    Params p = p_;
    p.token_size = token_size_ > 0 ? token_size_ : ref::ffn_worker_batching::payload_bytes(p);
    p.out_num = p.need_schedule == 0 ? (out_num_ >= 0 ? out_num_ : ref::ffn_worker_batching::dims(p).a) : 0;
    return {p, k_};
  }
  nlohmann::json json() const { auto [p, k] = build(); return to_json(p, k); }

 private:
  Params p_;
  Knobs k_;
  int64_t token_size_ = 0;
  int64_t out_num_ = -1;
};

}  // namespace opgate::cases::ffn_worker_batching
