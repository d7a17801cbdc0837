// The test-only stand-in for the CANN runtime, nnopbase and the aclnn operator libraries: the
// same symbols with the same prototypes (device/ascend/acl_abi.h), with "device memory" in host
// memory and operator calls forwarded to opgate's emulator. It checks what the real libraries
// would need from a caller (valid handles, device addresses, copy directions, a synchronised
// stream before reading results, the determinism switch, no context carried across fork) and
// fails loudly otherwise. Switches (environment variables) are listed in device/ascend/README.md.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "device/ascend/acl_abi.h"

#define STANDIN_API extern "C" __attribute__((visibility("default")))
#define STANDIN_SHARED __attribute__((visibility("default")))

// The objects behind nnopbase's opaque handles.
struct aclTensor {
  std::vector<int64_t> dims, strides, storage_dims;
  int64_t offset = 0;
  int32_t dtype = -1, format = -1;
  void* data = nullptr;
  bool in_list = false;  // owned by a tensor list: destroyed with it
};
struct aclIntArray {
  std::vector<int64_t> values;
};
struct aclTensorList {
  std::vector<aclTensor*> tensors;
};
// One accepted first phase: the operator it belongs to, the workspace it asked for, and the
// kernel to run when the stream is synchronised.
struct aclOpExecutor {
  std::string op;
  uint64_t workspace = 0;
  bool repeatable = false;
  std::function<std::string()> kernel;                  // "" or why the kernel failed
  std::vector<std::pair<void*, size_t>> writes;         // device ranges the kernel writes
};

namespace standin {

enum class Kind { kAllocation, kStream, kTensor, kIntArray, kTensorList, kExecutor };

// An environment switch, or `fallback`.
STANDIN_SHARED std::string env(const char* name, const char* fallback = "");
// OPGATE_STANDIN_FAIL="<symbol>[@<n>][:<code>],..." — the code `symbol` must return on this call
// (its n-th call in this process when @n is given), with an error message set. Counts calls.
STANDIN_SHARED std::optional<int> injected_failure(const char* symbol, int default_code);
// The message the next aclGetRecentErrMsg returns (and clears).
STANDIN_SHARED void set_error(const std::string& message);
STANDIN_SHARED const char* take_error();
// Appends "<pid> <line>" to the OPGATE_STANDIN_TRACE file, if set.
STANDIN_SHARED void trace(const std::string& line);
STANDIN_SHARED std::string shape_text(const std::vector<int64_t>& v);

// Process state. Every call first checks that the runtime was not initialised in another
// process (a context does not survive fork): 0, or an error code with the message set.
struct State {
  pid_t init_pid = 0;
  bool initialised = false, finalised = false;
  int32_t device = -1;
  int64_t ctx_deterministic = 0, process_deterministic = 0;
};
STANDIN_SHARED State& state();
// 0 if `call` may run: same process as aclInit, initialised (and a device set when `need_device`).
STANDIN_SHARED int require_context(const char* call, bool need_device);

// Live objects (handles created and not yet destroyed), for handle validation and leak checks.
STANDIN_SHARED void add_object(Kind kind, const void* p);
STANDIN_SHARED bool remove_object(Kind kind, const void* p);
STANDIN_SHARED bool is_live(Kind kind, const void* p);

// Device memory: allocations in host memory, tracked by range.
STANDIN_SHARED void* device_alloc(size_t bytes);
STANDIN_SHARED bool device_free(void* p);
// The allocation holding [p, p + bytes), as (start, size); nullopt if none holds all of it.
STANDIN_SHARED std::optional<std::pair<uint8_t*, size_t>> device_range(const void* p, size_t bytes);
// True if any byte of [p, p + bytes) is device memory.
STANDIN_SHARED bool touches_device(const void* p, size_t bytes);

// Streams: queued kernels run at aclrtSynchronizeStream.
STANDIN_SHARED void enqueue(aclrtStream stream, aclOpExecutor job);
// Runs the stream's queue in order: "" or the first failure.
STANDIN_SHARED std::string drain(aclrtStream stream);
// The queued kernel that will write into [p, p + bytes), if any: its operator name.
STANDIN_SHARED std::optional<std::string> pending_writer(const void* p, size_t bytes);
STANDIN_SHARED void drop_queue(aclrtStream stream);

}  // namespace standin
