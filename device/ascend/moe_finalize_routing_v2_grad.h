// aclnnMoeFinalizeRoutingV2Grad on the device (spec ascend-abi.md §5.2; seed 002 call example).
#pragma once

#include "device/ascend/acl_abi.h"
#include "device/ascend/ascend_op.h"

namespace opgate::ascend::moe_finalize_routing_v2_grad {

// The first phase, as declared in aclnn_moe_finalize_routing_v2_grad.h.
using GetWorkspaceSizeFn = aclnnStatus (*)(const aclTensor* gradY, const aclTensor* expandedRowIdx,
                                           const aclTensor* expandedXOptional, const aclTensor* scalesOptional,
                                           const aclTensor* expertIdxOptional, const aclTensor* biasOptional,
                                           int64_t dropPadMode, int64_t activeNum, int64_t expertNum,
                                           int64_t expertCapacity, const aclTensor* gradExpandedXOut,
                                           const aclTensor* gradScalesOut, uint64_t* workspaceSize,
                                           aclOpExecutor** executor);

// Entry point aclnnMoeFinalizeRoutingV2Grad; supported on Atlas A2, Atlas A3 and Ascend 950.
const AscendOp& op();

}  // namespace opgate::ascend::moe_finalize_routing_v2_grad
