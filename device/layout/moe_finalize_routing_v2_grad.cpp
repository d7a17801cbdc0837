// Identity layouts of aclnnMoeFinalizeRoutingV2Grad: the aclnn tensors are contiguous ND.
#include "device/layout/moe_finalize_routing_v2_grad.h"

namespace opgate::layout::moe_finalize_routing_v2_grad {

// The images share the canonical tensors' storage: nothing writes an input (the guards stage
// fails a device that does, before anything reads the canonical tensors again), so a copy of
// every input per case would buy nothing.
TensorMap pack(const Params& /*p*/, const TensorMap& canonical) { return canonical; }

SpecMap output_images(const Params& /*p*/, const SpecMap& specs) {
  SpecMap out;
  for (const char* name : {"gradExpandedXOut", "gradScalesOut"}) out[name] = specs.at(name);
  return out;
}

TensorMap unpack(const Params& /*p*/, const TensorMap& images) { return images; }

}  // namespace opgate::layout::moe_finalize_routing_v2_grad
