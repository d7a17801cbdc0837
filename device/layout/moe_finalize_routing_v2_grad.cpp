// Identity layouts of aclnnMoeFinalizeRoutingV2Grad: the aclnn tensors are contiguous ND.
#include "device/layout/moe_finalize_routing_v2_grad.h"

namespace opgate::layout::moe_finalize_routing_v2_grad {

TensorMap pack(const Params& /*p*/, const TensorMap& canonical) {
  TensorMap images;
  for (const auto& [name, t] : canonical) images[name] = t.clone();
  return images;
}

SpecMap output_images(const Params& /*p*/, const SpecMap& specs) {
  SpecMap out;
  for (const char* name : {"gradExpandedXOut", "gradScalesOut"}) out[name] = specs.at(name);
  return out;
}

TensorMap unpack(const Params& /*p*/, const TensorMap& images) { return images; }

}  // namespace opgate::layout::moe_finalize_routing_v2_grad
