// libFuzzer target for aclnnIncreFlashAttentionV4 over the shared operator harness
// (fuzz/op_target.h). The BSH/BNSD/BSND and paged-KV images have no inverse in the layout layer, so
// the generic layout checks apply and the comparison with the reference proves the packing.
#include "fuzz/op_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return opgate::fuzz::run_op_target("incre_flash_attention_v4", data, size);
}
