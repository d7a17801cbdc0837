// The C ABI of the CANN runtime (libascendcl / libacl_rt) and of nnopbase that the ascend backend
// calls through dlsym, written from spec ascend-abi.md §3-§7 so no CANN header is needed. The
// symbol lists are X-macros: the backend expands them into function-pointer tables, the test
// stand-in (tests/ascend) into its extern "C" definitions, so both sides share one prototype.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

// §3: status types, handles and opaque objects.
typedef int aclError;
typedef int32_t aclnnStatus;
typedef void* aclrtStream;
typedef struct aclTensor aclTensor;
typedef struct aclIntArray aclIntArray;
typedef struct aclTensorList aclTensorList;
typedef struct aclOpExecutor aclOpExecutor;

// aclsysGetCANNVersion's result (hicann/runtime docs aclCANNPackageVersion.md).
struct aclCANNPackageVersion {
  char version[128];
  char majorVersion[64];
  char minorVersion[64];
  char releaseVersion[64];
  char patchVersion[64];
  char reserved[128];
};

}  // extern "C"

// X(required, return type, name, parameter list) for the runtime library (§4). Enum parameters
// (aclrtMemMallocPolicy, aclrtMemcpyKind, aclSysParamOpt, aclCANNPackageName) are int-sized C
// enums and are declared int32_t. Optional symbols (0) are absent from older runtimes.
#define OPGATE_ACL_RUNTIME_SYMBOLS(X)                                                           \
  X(1, aclError, aclInit, (const char* configPath))                                             \
  X(1, aclError, aclFinalize, (void))                                                           \
  X(1, const char*, aclGetRecentErrMsg, (void))                                                 \
  X(1, aclError, aclrtSetDevice, (int32_t deviceId))                                            \
  X(1, aclError, aclrtResetDevice, (int32_t deviceId))                                          \
  X(1, aclError, aclrtGetDeviceCount, (uint32_t * count))                                       \
  X(1, aclError, aclrtCreateStream, (aclrtStream * stream))                                     \
  X(1, aclError, aclrtDestroyStream, (aclrtStream stream))                                      \
  X(1, aclError, aclrtSynchronizeStream, (aclrtStream stream))                                  \
  X(1, aclError, aclrtMalloc, (void** devPtr, size_t size, int32_t policy))                     \
  X(1, aclError, aclrtFree, (void* devPtr))                                                     \
  X(1, aclError, aclrtMemcpy, (void* dst, size_t destMax, const void* src, size_t count, int32_t kind)) \
  X(1, aclError, aclrtCtxSetSysParamOpt, (int32_t opt, int64_t value))                          \
  X(1, const char*, aclrtGetSocName, (void))                                                    \
  X(0, aclError, aclrtSetSysParamOpt, (int32_t opt, int64_t value))                             \
  X(0, aclError, aclsysGetCANNVersion, (int32_t name, aclCANNPackageVersion * version))

// The same for nnopbase (§4, "Meta API"). The executor pair frees an executor that was never
// launched (rejection probes): mark it repeatable, then destroy it.
#define OPGATE_ACL_NNOPBASE_SYMBOLS(X)                                                          \
  X(1, aclTensor*, aclCreateTensor,                                                             \
    (const int64_t* viewDims, uint64_t viewDimsNum, int32_t dataType, const int64_t* stride,    \
     int64_t offset, int32_t format, const int64_t* storageDims, uint64_t storageDimsNum,       \
     void* tensorData))                                                                         \
  X(1, aclnnStatus, aclDestroyTensor, (const aclTensor* tensor))                                \
  X(1, aclIntArray*, aclCreateIntArray, (const int64_t* value, uint64_t size))                  \
  X(1, aclnnStatus, aclDestroyIntArray, (const aclIntArray* array))                             \
  X(1, aclTensorList*, aclCreateTensorList, (const aclTensor* const* value, uint64_t size))     \
  X(1, aclnnStatus, aclDestroyTensorList, (const aclTensorList* array))                         \
  X(0, aclnnStatus, aclSetAclOpExecutorRepeatable, (aclOpExecutor * executor))                  \
  X(0, aclnnStatus, aclDestroyAclOpExecutor, (aclOpExecutor * executor))

// The second phase every aclnn operator shares (§4 "Two-phase pattern").
using AclnnLaunchFn = aclnnStatus (*)(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                      aclrtStream stream);

namespace opgate::acl {

// aclDataType (§6.1), the values opgate's dtypes map to.
constexpr int32_t kFloat = 0, kFloat16 = 1, kInt8 = 2, kInt32 = 3, kUint8 = 4, kInt64 = 9, kUint64 = 10,
                  kDouble = 11, kBool = 12, kBf16 = 27;
// aclFormat ND (§6.2), aclrtMemcpyKind (§6.3), aclrtMemMallocPolicy (§6.4), aclSysParamOpt (§6.5).
constexpr int32_t kFormatNd = 2;
constexpr int32_t kMemcpyHostToHost = 0, kMemcpyHostToDevice = 1, kMemcpyDeviceToHost = 2,
                  kMemcpyDeviceToDevice = 3;
constexpr int32_t kMallocHugeFirst = 0;
constexpr int32_t kOptDeterministic = 0;
constexpr int32_t kPackageCann = 0;  // aclCANNPackageName ACL_PKG_NAME_CANN
// Status codes (§6.6, §6.7).
constexpr int32_t kSuccess = 0;
constexpr int32_t kErrorInvalidParam = 100000, kErrorUninitialize = 100001, kErrorRepeatInitialize = 100002;
constexpr int32_t kErrorRtInvalidDeviceId = 107001, kErrorRtContextNull = 107002;
constexpr int32_t kErrorRtNoDevice = 207004, kErrorBadAlloc = 200000;
constexpr int32_t kErrorRtFailure = 500003, kErrorRtDrvInternal = 507899;
constexpr int32_t kAclnnParamNullptr = 161001, kAclnnParamInvalid = 161002, kAclnnInner = 561000;
// aclCreateTensor: the device address must be 32-byte aligned (aclCreateTensor.md).
constexpr size_t kTensorAlignment = 32;

}  // namespace opgate::acl
