// Device memory images of aclnnMoeFinalizeRoutingV2Grad. Every argument is a dense ND tensor, so
// the images are the canonical tensors themselves (spec routing-ops.md §3.1).
#pragma once

#include "core/tensor.h"
#include "reference/moe_finalize_routing_v2_grad.h"

namespace opgate::layout::moe_finalize_routing_v2_grad {

using Params = ref::moe_finalize_routing_v2_grad::Params;

// Canonical inputs -> the images the aclnn call receives (absent optionals have no entry).
TensorMap pack(const Params& p, const TensorMap& canonical);
// The output buffers to allocate: gradExpandedXOut and gradScalesOut as described by `specs`.
SpecMap output_images(const Params& p, const SpecMap& specs);
// Output images -> canonical outputs.
TensorMap unpack(const Params& p, const TensorMap& images);

}  // namespace opgate::layout::moe_finalize_routing_v2_grad
