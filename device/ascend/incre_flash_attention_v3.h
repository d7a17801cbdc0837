// aclnnIncreFlashAttentionV3 on the device (spec ascend-abi.md §5.4; seed 003).
#pragma once

#include "device/ascend/acl_abi.h"
#include "device/ascend/ascend_op.h"

namespace opgate::ascend::incre_flash_attention_v3 {

// The first phase, as declared in aclnn_incre_flash_attention_v3.h. scaleValue is a double.
using GetWorkspaceSizeFn = aclnnStatus (*)(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value, const aclTensor* pseShift,
    const aclTensor* attenMask, const aclIntArray* actualSeqLengths, const aclTensor* dequantScale1,
    const aclTensor* quantScale1, const aclTensor* dequantScale2, const aclTensor* quantScale2,
    const aclTensor* quantOffset2, const aclTensor* antiquantScale, const aclTensor* antiquantOffset,
    const aclTensor* blocktable, int64_t numHeads, double scaleValue, char* inputLayout, int64_t numKeyValueHeads,
    int64_t blockSize, int64_t innerPrecise, const aclTensor* attentionOut, uint64_t* workspaceSize,
    aclOpExecutor** executor);

// Entry point aclnnIncreFlashAttentionV3; supported on Atlas A2 and the Atlas inference series.
const AscendOp& op();

}  // namespace opgate::ascend::incre_flash_attention_v3
