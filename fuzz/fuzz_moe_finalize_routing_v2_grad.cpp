// libFuzzer target for aclnnMoeFinalizeRoutingV2Grad over the shared operator harness
// (fuzz/op_target.h); every aclnn tensor is the canonical one (spec routing-ops.md §3.1), so the
// layout check is that pack and unpack are the identity.
#include "fuzz/op_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return opgate::fuzz::run_op_target("moe_finalize_routing_v2_grad", data, size, opgate::fuzz::identity_layout);
}
