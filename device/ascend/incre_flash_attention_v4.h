// aclnnIncreFlashAttentionV4 on the device (cases/incre_flash_attention_v4/README.md, "ABI").
#pragma once

#include "device/ascend/acl_abi.h"
#include "device/ascend/ascend_op.h"

namespace opgate::ascend::incre_flash_attention_v4 {

// The first phase, as declared in aclnn_incre_flash_attention_v4.h (yueliang13/cann-ops-adv-vllm,
// src/transformer/incre_flash_attention/ophost/aclnn_incre_flash_attention_v4.h): V3's 24
// parameters with kvPaddingSize after blocktable, 25 in all. scaleValue is a double.
using GetWorkspaceSizeFn = aclnnStatus (*)(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value, const aclTensor* pseShift,
    const aclTensor* attenMask, const aclIntArray* actualSeqLengths, const aclTensor* dequantScale1,
    const aclTensor* quantScale1, const aclTensor* dequantScale2, const aclTensor* quantScale2,
    const aclTensor* quantOffset2, const aclTensor* antiquantScale, const aclTensor* antiquantOffset,
    const aclTensor* blocktable, const aclTensor* kvPaddingSize, int64_t numHeads, double scaleValue,
    char* inputLayout, int64_t numKeyValueHeads, int64_t blockSize, int64_t innerPrecise,
    const aclTensor* attentionOut, uint64_t* workspaceSize, aclOpExecutor** executor);

// Entry point aclnnIncreFlashAttentionV4; Atlas A2 and the Atlas inference series, CANN >= 8.0.0.
const AscendOp& op();

}  // namespace opgate::ascend::incre_flash_attention_v4
