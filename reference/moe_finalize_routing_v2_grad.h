// Double-precision reference of aclnnMoeFinalizeRoutingV2Grad (spec routing-ops.md §3), with the
// validation of its aclnn layer and tiling (§3.4).
#pragma once

#include <cstdint>

#include "core/reference_outputs.h"
#include "core/status.h"
#include "core/tensor.h"

namespace opgate::ref::moe_finalize_routing_v2_grad {

// Bumped whenever the reference's semantics change on purpose (golden-format.md).
constexpr int kReferenceVersion = 2;

// Problem descriptor. Names follow the aclnn attributes; R, K, H are the problem dimensions.
struct Params {
  int64_t num_rows = 1;    // R: rows of gradY
  int64_t top_k = 1;       // K: scales.dim1 (1 when scales are absent)
  int64_t hidden = 1;      // H
  DType dtype = DType::kF32;  // gradY, expandedX, scales, bias and both outputs
  bool has_scales = false;    // scalesOptional (and then expandedXOptional) present
  bool has_bias = false;      // biasOptional and expertIdxOptional present (read only with scales)
  int64_t drop_pad_mode = 0;  // 0 dropless, 1 drop/pad
  int64_t active_num = 0;     // mode 0: effective iff 0 < activeNum < R*K
  int64_t expert_num = 1;     // E: bias rows; mode 1 also E*C rows of expandedX
  int64_t expert_capacity = 1;  // C (mode 1)
  bool operator==(const Params& o) const;
};

// D0, the row count of expandedX / gradExpandedXOut: activeNum if mode 0 and 0 < activeNum < R*K,
// E*C in mode 1, else R*K.
int64_t expanded_rows(const Params& p);

// Descriptors of a well-formed call: inputs gradY, expandedRowIdx, expandedXOptional,
// scalesOptional, expertIdxOptional, biasOptional (present per Params) and outputs
// gradExpandedXOut ((D0, H), or (E, C, H) in mode 1) and gradScalesOut ((R, K), or (R, 1) unwritten
// when scales are absent).
SpecMap specs(const Params& p);

// The checks of the aclnn layer (161001, 161002) and of tiling/infershape (561103) on the
// attributes and tensor descriptors, in the kernel's order. Ok, or kAclnnError with the code and
// a message quoting the violated rule (kInvalidCase for a negative extent, which no tensor has).
Status validate(const Params& p, const SpecMap& specs);

// Data conditions under which the kernel's result is undefined or it would read out of bounds:
// expertIdx outside [0, E) (when bias is used), expandedRowIdx outside [-1, R*K-1] (mode 0) or
// [-1, E*C-1] (mode 1), or one valid row (0 <= row < D0) addressed twice (last writer wins across
// cores). Also checks that `inputs` match specs(p). Ok or kInvalidCase.
Status check_data(const Params& p, const TensorMap& inputs);

// Expected outputs for valid inputs (tensors named as in `specs`, in their device dtypes):
//   K = scales.dim1 (1 without scales); i = r*K + k; row = expandedRowIdx[i]; valid = 0 <= row < D0
//   mode 1: gradExpandedX[0:D0] = 0 first (mode 0 leaves unaddressed rows undefined)
//   valid:    gradExpandedX[row,:] = s_i * gradY[r,:]       (s_i = 1 without scales)
//             gradScales[i] = sum_j (expandedX[row,j] + bias[expertIdx[i],j]) * gradY[r,j]
//   invalid:  gradScales[i] = sum_j bias[expertIdx[i],j] * gradY[r,j]   (0 without bias)
// magnitude: gradScales -> sum_j |(x + b)_j * g_j| (the fp32 rounding of x + b is relative to it);
// gradExpandedX -> absent, i.e. 0 (a single rounding of an exact product). care: unaddressed
// mode-0 rows and the unwritten (R, 1) gradScalesOut are 0.
// Precondition: validate(p, specs(p)) and check_data(p, inputs) are ok.
RefOutputs reference(const Params& p, const TensorMap& inputs);

}  // namespace opgate::ref::moe_finalize_routing_v2_grad
