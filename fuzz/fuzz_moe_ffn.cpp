// libFuzzer target for aclnnMoeFFN over the shared operator harness (fuzz/op_target.h); every aclnn
// tensor is the canonical one (spec attention-and-ffn.md §2.2; expertTokens is a host array in the
// params), so the layout check is that pack and unpack are the identity.
#include "fuzz/op_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return opgate::fuzz::run_op_target("moe_ffn", data, size, opgate::fuzz::identity_layout);
}
