// Cases of aclnnMoeFinalizeRoutingV2Grad: the JSON binding of its params, the generator, the
// fills and the compare plan (cases/moe_finalize_routing_v2_grad/README.md explains each choice).
#pragma once

#include <nlohmann/json.hpp>

#include "cases/chooser.h"
#include "core/compare.h"
#include "core/op_registry.h"
#include "core/problem.h"
#include "reference/moe_finalize_routing_v2_grad.h"

namespace opgate::cases::moe_finalize_routing_v2_grad {

using Params = ref::moe_finalize_routing_v2_grad::Params;

// How the routing data is generated; does not change the call.
struct Knobs {
  double drop_rate = 0.0;  // share of slots additionally given index -1 (dropped)
  double skew = 0.0;       // share of slots routed to expert 0 (a hot expert; overflows capacity)
  bool operator==(const Knobs& o) const { return drop_rate == o.drop_rate && skew == o.skew; }
};

const OpInfo& op_info();

// {"dtype","R","K","H","scales","bias","dropPadMode","activeNum","expertNum","expertCapacity",
//  "dropRate","skew"}; strict: unknown keys and out-of-range values are errors naming the key.
Expected<std::pair<Params, Knobs>> from_json(const nlohmann::json& j);
nlohmann::json to_json(const Params& p, const Knobs& k);

// A valid, small-to-medium problem drawn through the Chooser.
nlohmann::json generate(Chooser& c);

// Canonical inputs in device dtypes: routing (expertIdx, expandedRowIdx) from the knobs, values
// per fill mode. exact: small integers and power-of-two scales, so every product and partial sum
// is exact in fp32; realistic: normal activations, softmax-like scales; adversarial: values near
// the dtype's range, NaN/Inf in one row, zero scales, all-dropped rows.
Expected<TensorMap> fill(const Params& p, const Knobs& k, const SpecMap& specs, FillMode mode, uint64_t seed);

ComparePlan compare_plan(const Params& p, const RefOutputs& ref, FillMode mode);

// "expandedX row 5 = (r 2, k 1), col 17" and "r 2, k 1 -> row 5, expert 3".
std::string describe(const Params& p, const std::string& output, const std::vector<int64_t>& index,
                     const TensorMap& inputs);

// Fluent construction for tests: Builder().dtype(kF16).rows(4).top_k(2).hidden(8).scales().build().
class Builder {
 public:
  Builder& dtype(DType d) { p_.dtype = d; return *this; }
  Builder& rows(int64_t r) { p_.num_rows = r; return *this; }
  Builder& top_k(int64_t k) { p_.top_k = k; return *this; }
  Builder& hidden(int64_t h) { p_.hidden = h; return *this; }
  Builder& scales(bool on = true) { p_.has_scales = on; return *this; }
  // Without scales the bias and expertIdx are passed but ignored by the kernel.
  Builder& bias(bool on = true) { p_.has_bias = on; return *this; }
  Builder& drop_pad(int64_t experts, int64_t capacity) {
    p_.drop_pad_mode = 1; p_.expert_num = experts; p_.expert_capacity = capacity; return *this;
  }
  Builder& experts(int64_t e) { p_.expert_num = e; return *this; }
  Builder& active_num(int64_t a) { p_.active_num = a; return *this; }
  Builder& drop_rate(double d) { k_.drop_rate = d; return *this; }
  Builder& skew(double s) { k_.skew = s; return *this; }
  // Without scales K is 1 (spec §3.4 rule 6).
  std::pair<Params, Knobs> build() const {
    Params p = p_;
    if (!p.has_scales) p.top_k = 1;
    return {p, k_};
  }
  nlohmann::json json() const { auto [p, k] = build(); return to_json(p, k); }

 private:
  Params p_;
  Knobs k_;
};

}  // namespace opgate::cases::moe_finalize_routing_v2_grad
