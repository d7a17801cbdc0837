// Identity layouts of aclnnMoeFFN: the aclnn tensors are contiguous ND.
#include "device/layout/moe_ffn.h"

namespace opgate::layout::moe_ffn {

TensorMap pack(const Params& /*p*/, const TensorMap& canonical) {
  TensorMap images;
  for (const auto& [name, t] : canonical) images[name] = t.clone();
  return images;
}

SpecMap output_images(const Params& /*p*/, const SpecMap& specs) { return {{"y", specs.at("y")}}; }

TensorMap unpack(const Params& /*p*/, const TensorMap& images) { return images; }

}  // namespace opgate::layout::moe_ffn
