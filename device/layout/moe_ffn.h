// Device memory images of aclnnMoeFFN. Every tensor argument is a dense ND tensor (x, weights
// (E, K, N) not transposed, biases, quantisation parameters with deqScale as the uint64/int64/fp32
// words the kernel reads), so the images are the canonical tensors; expertTokens is a host
// aclIntArray and lives in the params (spec attention-and-ffn.md §2.2).
#pragma once

#include "core/tensor.h"
#include "reference/moe_ffn.h"

namespace opgate::layout::moe_ffn {

using Params = ref::moe_ffn::Params;

// Canonical inputs -> the images the aclnn call receives (absent optionals have no entry).
TensorMap pack(const Params& p, const TensorMap& canonical);
// The output buffer to allocate: y as described by `specs`.
SpecMap output_images(const Params& p, const SpecMap& specs);
// Output images -> canonical outputs.
TensorMap unpack(const Params& p, const TensorMap& images);

}  // namespace opgate::layout::moe_ffn
