// The forward pass of the aclnnMoeFFN reference in double, row block by row block, with the error
// budget of every output element (spec attention-and-ffn.md §2.3, §2.5, §2.7).
#pragma once

#include "core/tensor.h"
#include "reference/moe_ffn.h"

namespace opgate::ref::moe_ffn {

// Fills y (f64, (M, K1)) with the exact result and magnitude (f64, (M, K1)) with its absolute
// error budget; the formulas are those of `reference` in reference/moe_ffn.h.
void forward(const Params& p, const TensorMap& in, Tensor& y, Tensor& magnitude);

}  // namespace opgate::ref::moe_ffn
