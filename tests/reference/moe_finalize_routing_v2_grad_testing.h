// Shared helpers of the MoeFinalizeRoutingV2Grad reference tests and properties: canonical inputs
// from hand-written values, and the forward MoeFinalizeRoutingV2 (routing-ops.md §2.2) evaluated
// on the same routing, which the gradient properties differentiate.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "reference/moe_finalize_routing_v2_grad.h"
#include "reference/moe_finalize_routing_v2_grad/moe_finalize_routing_v2.h"

namespace opgate::moe_finalize_routing_v2_grad_testing {

using ref::moe_finalize_routing_v2_grad::expanded_rows;
using ref::moe_finalize_routing_v2_grad::Params;
using ref::moe_finalize_routing_v2_grad::specs;
namespace fwd = ref::moe_finalize_routing_v2_grad::forward;

// One call's input values in canonical order; tensors absent in specs(p) are skipped.
struct Values {
  std::vector<double> grad_y, row_idx, expanded_x, scales, expert_idx, bias;
};

inline TensorMap make_inputs(const Params& p, const Values& v) {
  const SpecMap s = specs(p);
  const std::pair<const char*, const std::vector<double>*> names[] = {
      {"gradY", &v.grad_y},
      {"expandedRowIdx", &v.row_idx},
      {"expandedXOptional", &v.expanded_x},
      {"scalesOptional", &v.scales},
      {"expertIdxOptional", &v.expert_idx},
      {"biasOptional", &v.bias}};
  TensorMap m;
  for (const auto& [name, vals] : names) {
    const TensorSpec& t = s.at(name);
    if (t.present) m[name] = Tensor::from_values(t.dtype, t.shape, *vals);
  }
  return m;
}

inline std::vector<double> values_of(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get(i);
  return v;
}

struct Problem {
  Params p;
  Values v;
};

// The forward (mode 2 for grad mode 0, mode 3 for grad mode 1) with float inputs in dtype `t`.
inline fwd::Params forward_params(const Params& p, DType t) {
  fwd::Params f;
  f.num_rows = p.num_rows;
  f.top_k = p.top_k;
  f.hidden = p.hidden;
  f.dtype = f.scales_dtype = t;
  f.drop_pad_mode = p.drop_pad_mode == 0 ? 2 : 3;
  f.expanded_rows = expanded_rows(p);
  f.expert_num = p.expert_num;
  f.expert_capacity = p.expert_capacity;
  f.has_scales = p.has_scales;
  f.has_bias = p.has_bias && p.has_scales;  // the grad reads bias only with scales
  return f;
}

// F(x, s) in double with the s*b dropped-slot convention the gradient differentiates; inputs are
// f64 unless `t` says otherwise.
inline std::vector<double> forward(const Problem& c, const std::vector<double>& x,
                            const std::vector<double>& s, DType t = DType::kF64) {
  const fwd::Params f = forward_params(c.p, t);
  const SpecMap fs = fwd::specs(f);
  const std::pair<const char*, const std::vector<double>*> names[] = {
      {"expandedX", &x},
      {"expandedRowIdx", &c.v.row_idx},
      {"scalesOptional", &s},
      {"expertIdxOptional", &c.v.expert_idx},
      {"biasOptional", &c.v.bias}};
  TensorMap in;
  for (const auto& [name, vals] : names) {
    const TensorSpec& spec = fs.at(name);
    if (spec.present) in[name] = Tensor::from_values(spec.dtype, spec.shape, *vals);
  }
  return values_of(fwd::reference(f, in, fwd::DroppedSlot::kScaledBias));
}

}  // namespace opgate::moe_finalize_routing_v2_grad_testing
