// Shared helpers of the MoeFinalizeRoutingV2Grad emulator tests and properties: canonical inputs
// of a Case, poisoned output buffers, and the count of cared output elements outside
// what the kernel may return (routing-ops.md §3.3 numerics, §4 tolerance).
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "reference/moe_finalize_routing_v2_grad.h"
#include "tests/reference/moe_finalize_routing_v2_grad_testing.h"

namespace opgate::moe_finalize_routing_v2_grad_testing {

namespace grad_ref = ref::moe_finalize_routing_v2_grad;
using grad_ref::Params;

constexpr const char* kGradX = "gradExpandedXOut";
constexpr const char* kGradScales = "gradScalesOut";

// A call's params and input values (tests/reference/moe_finalize_routing_v2_grad_testing.h).
using Case = Problem;

inline TensorMap make_inputs(const Case& c) { return make_inputs(c.p, c.v); }

// NaN bit patterns no arithmetic produces, like the runner's output poison.
inline uint64_t poison_bits(DType t) {
  return t == DType::kF32 ? 0x7FBADBADu : t == DType::kF16 ? 0x7DBDu : 0x7FBDu;
}

inline TensorMap make_poisoned_outputs(const Params& p) {
  const SpecMap s = grad_ref::specs(p);
  TensorMap out;
  for (const char* name : {kGradX, kGradScales}) {
    Tensor t = Tensor::zeros(s.at(name).dtype, s.at(name).shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.set_bits(i, poison_bits(t.dtype()));
    out[name] = t;
  }
  return out;
}

// Equal values, NaN matching only NaN (IEEE propagates NaN and Inf through the kernel's products).
inline bool same_value(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// Cared elements the device output gets wrong: gradExpandedX must equal the RNE-rounded exact
// product; gradScales must lie within the fp32 accumulation bound of §4 plus half an output ulp.
inline int64_t count_violations(const Params& p, const TensorMap& in, const TensorMap& out) {
  const RefOutputs r = grad_ref::reference(p, in);
  int64_t bad = 0;
  const Tensor& gx = out.at(kGradX);
  for (int64_t j = 0; j < gx.numel(); ++j) {
    if (r.care.at(kGradX).get(j) == 0.0) continue;
    if (!same_value(gx.get(j), round_to(gx.dtype(), r.expected.at(kGradX).get(j)))) ++bad;
  }
  const Tensor& gs = out.at(kGradScales);
  const auto h = static_cast<double>(p.hidden);
  // The derivation of spec §4 without the plan's rounding up (ceil): at most as wide as the shipped
  // plan, so an emulator within it is within the plan, and a defect outside the plan is outside it.
  const double c = std::ldexp(1.0, -23) * (h / 8 + std::log2(h) + 2);
  for (int64_t i = 0; i < gs.numel(); ++i) {
    if (r.care.at(kGradScales).get(i) == 0.0) continue;
    const double e = r.expected.at(kGradScales).get(i);
    const double tol = c * r.magnitude.at(kGradScales).get(i) + ulp(gs.dtype(), e) / 2;
    if (!std::isfinite(e) ? !same_value(gs.get(i), e) : !(std::fabs(gs.get(i) - e) <= tol)) ++bad;
  }
  return bad;
}

}  // namespace opgate::moe_finalize_routing_v2_grad_testing
