// Double-precision reference of the forward MoeFinalizeRoutingV2 (routing-ops.md §2.2) with its
// validation (§2.4). It exists so the gradient of aclnnMoeFinalizeRoutingV2Grad can be checked
// against the function it differentiates.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"

namespace opgate::ref::moe_finalize_routing_v2_grad::forward {

// Problem descriptor; R, K, H as in the spec. Tensor names: expandedX, expandedRowIdx, x1Optional,
// x2Optional, biasOptional, scalesOptional, expertIdxOptional; output out.
struct Params {
  int64_t num_rows = 1;       // R
  int64_t top_k = 1;          // K = scales.dim1 (1 without scales)
  int64_t hidden = 1;         // H
  DType dtype = DType::kF32;  // expandedX, x1, x2, bias, out
  DType scales_dtype = DType::kF32;
  int64_t drop_pad_mode = 2;    // 0..3; 0/1 index K-major (k*R + r), 2/3 row-major (r*K + k)
  int64_t expanded_rows = 1;    // modes 0/2: expandedX.dim0 (R*K in the documented layout)
  int64_t expert_num = 1;       // E: bias rows; modes 1/3: expandedX.dim0
  int64_t expert_capacity = 1;  // C: modes 1/3: expandedX.dim1
  bool has_x1 = false;
  bool has_x2 = false;  // needs x1
  bool has_scales = false;
  bool has_bias = false;  // biasOptional and expertIdxOptional
};

// What a dropped slot (index outside [0, numRows), e.g. -1) contributes.
enum class DroppedSlot : uint8_t {
  kSkip,        // nothing (most A2/A3 variants and the Ascend 950 kernel)
  kScaledBias,  // s * b (fp_cuth and the UT golden; the convention the grad differentiates)
};

// numRows of the expandedX view: expanded_rows (modes 0/2) or E*C (modes 1/3).
int64_t num_expanded_rows(const Params& p);

// Descriptors of a well-formed call (absent optionals have present = false).
SpecMap specs(const Params& p);

// aclnn (161001, 161002) and tiling (561103) checks of §2.4, first violation wins.
Status validate(const Params& p, const SpecMap& specs);

// out[r, :] = x1[r, :] + x2[r, :] + sum_k s(r,k) * (X[idx(r,k), :] + b(r,k)), in double (f64,
// shape (R, H)). Inputs may be in any dtype (f64 for finite-difference tests). Precondition: the
// inputs match specs(p) in shape and expertIdx lies in [0, E).
Tensor reference(const Params& p, const TensorMap& inputs, DroppedSlot dropped);

}  // namespace opgate::ref::moe_finalize_routing_v2_grad::forward
