// aclnnMoeFFN on the device: the legacy aclnnMoeFFN where the operator library still exports it,
// else the equivalent aclnnFFN call with expertTokens (spec attention-and-ffn.md §2.1,
// ascend-abi.md §5.5). The report's backend section names the entry point used.
#pragma once

#include "device/ascend/acl_abi.h"
#include "device/ascend/ascend_op.h"

namespace opgate::ascend::moe_ffn {

// aclnnMoeFFNGetWorkspaceSize (seed 004); activation is a mutable char*.
using MoeFfnGetWorkspaceSizeFn = aclnnStatus (*)(
    const aclTensor* x, const aclIntArray* expertTokens, const aclTensor* weight1, const aclTensor* bias1,
    const aclTensor* weight2, const aclTensor* bias2, const aclTensor* scale, const aclTensor* offset,
    const aclTensor* deqScale1, const aclTensor* deqScale2, char* activation, const aclTensor* y,
    uint64_t* workspaceSize, aclOpExecutor** executor);
// aclnnFFNGetWorkspaceSize (aclnn_ffn.h): the antiquant tensors are NULL for this operator.
using FfnGetWorkspaceSizeFn = aclnnStatus (*)(
    const aclTensor* x, const aclTensor* weight1, const aclTensor* weight2, const aclIntArray* expertTokens,
    const aclTensor* bias1, const aclTensor* bias2, const aclTensor* scale, const aclTensor* offset,
    const aclTensor* deqScale1, const aclTensor* deqScale2, const aclTensor* antiquantScale1,
    const aclTensor* antiquantScale2, const aclTensor* antiquantOffset1, const aclTensor* antiquantOffset2,
    const char* activation, int64_t innerPrecise, const aclTensor* y, uint64_t* workspaceSize,
    aclOpExecutor** executor);

// Entry points aclnnMoeFFN, then aclnnFFN; supported on Atlas A2.
const AscendOp& op();

}  // namespace opgate::ascend::moe_ffn
