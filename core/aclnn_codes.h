// The aclnn status codes the references return for rejected calls (CANN aclnn_status, spec
// ascend-abi.md §6.6; 561103 per routing-ops.md): one definition for every operator.
#pragma once

#include <cstdint>

namespace opgate::aclnn {

constexpr int64_t kParamNullptr = 161001;  // ACLNN_ERR_PARAM_NULLPTR: a required argument is null
constexpr int64_t kParamInvalid = 161002;  // ACLNN_ERR_PARAM_INVALID: dtype, format or shape invalid
constexpr int64_t kInnerTiling = 561002;   // ACLNN_ERR_INNER_TILING_ERROR
constexpr int64_t kInnerNullptr = 561103;  // ACLNN_ERR_INNER_NULLPTR

}  // namespace opgate::aclnn
