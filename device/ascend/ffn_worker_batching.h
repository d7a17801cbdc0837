// aclnnFfnWorkerBatching on the device (spec ascend-abi.md §5.1; seed 000; routing-ops.md §1.2-§1.3).
#pragma once

#include "device/ascend/acl_abi.h"
#include "device/ascend/ascend_op.h"

namespace opgate::ascend::ffn_worker_batching {

// aclnn_ffn_worker_batching.h.
using GetWorkspaceSizeFn = aclnnStatus (*)(
    const aclTensor* scheduleContext, int64_t expertNum, const aclIntArray* maxOutShape, int64_t tokenDtype,
    int64_t needSchedule, int64_t layerNum, const aclTensor* y, const aclTensor* groupList,
    const aclTensor* sessionIds, const aclTensor* microBatchIds, const aclTensor* tokenIds,
    const aclTensor* expertOffsets, const aclTensor* dynamicScale, const aclTensor* actualTokenNum,
    uint64_t* workspaceSize, aclOpExecutor** executor);
// aclnn_ffn_worker_batching_v2.h: the same with `bool syncFlag` after layerNum (effective on 950 only).
using V2GetWorkspaceSizeFn = aclnnStatus (*)(
    const aclTensor* scheduleContext, int64_t expertNum, const aclIntArray* maxOutShape, int64_t tokenDtype,
    int64_t needSchedule, int64_t layerNum, bool syncFlag, const aclTensor* y, const aclTensor* groupList,
    const aclTensor* sessionIds, const aclTensor* microBatchIds, const aclTensor* tokenIds,
    const aclTensor* expertOffsets, const aclTensor* dynamicScale, const aclTensor* actualTokenNum,
    uint64_t* workspaceSize, aclOpExecutor** executor);

// Entry points aclnnFfnWorkerBatching, then aclnnFfnWorkerBatchingV2 (syncFlag false); supported on
// Atlas A2, Atlas A3 and Ascend 950.
const AscendOp& op();

}  // namespace opgate::ascend::ffn_worker_batching
