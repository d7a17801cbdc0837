// RAII owners of every CANN resource the ascend backend creates (style-and-layout.md B14): device
// memory, aclTensor, aclTensorList, aclIntArray, an unlaunched aclOpExecutor and the stream; and
// the one way a failed call becomes a Status (code plus aclGetRecentErrMsg, read at once).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "device/ascend/acl_loader.h"

namespace opgate::ascend {

// "<call> failed with <code>: <runtime message>". Reads aclGetRecentErrMsg immediately (it
// returns and clears the thread's message, spec ascend-abi.md §4) and copies it.
std::string failure_text(const AclApi& api, const std::string& call, int64_t code);
// kBackendError carrying failure_text and, as its aclnn code, `code`.
Status call_failed(const AclApi& api, const std::string& call, int64_t code);
// kBackendError "<call> returned NULL: <runtime message>" for the create calls.
Status returned_null(const AclApi& api, const std::string& call);

// The aclDataType of an opgate dtype (§6.1).
int32_t acl_dtype(DType t);

// Owns one handle of type T; Destroy releases it through the API. Move-only.
template <class T, void (*Destroy)(const AclApi&, T)>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  UniqueHandle(const AclApi* api, T handle) : api_(api), handle_(handle) {}
  UniqueHandle(UniqueHandle&& o) noexcept : api_(o.api_), handle_(std::exchange(o.handle_, T{})) {}
  UniqueHandle& operator=(UniqueHandle&& o) noexcept {
    if (this != &o) {
      reset();
      api_ = o.api_;
      handle_ = std::exchange(o.handle_, T{});
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  ~UniqueHandle() { reset(); }

  T get() const { return handle_; }
  // Gives up ownership (the handle now belongs to a list, or the runtime consumed it).
  T release() { return std::exchange(handle_, T{}); }
  void reset() {
    if (handle_ != T{}) Destroy(*api_, handle_);
    handle_ = T{};
  }

 private:
  const AclApi* api_ = nullptr;
  T handle_{};
};

void free_device(const AclApi& api, void* ptr);
void destroy_tensor(const AclApi& api, aclTensor* t);
void destroy_tensor_list(const AclApi& api, aclTensorList* l);
void destroy_int_array(const AclApi& api, aclIntArray* a);
void destroy_stream(const AclApi& api, aclrtStream s);
// An executor that was never launched: marked repeatable, then destroyed, when nnopbase exports
// both calls (otherwise it is left to the process exit).
void discard_executor(const AclApi& api, aclOpExecutor* e);

using TensorHandle = UniqueHandle<aclTensor*, destroy_tensor>;
using TensorListHandle = UniqueHandle<aclTensorList*, destroy_tensor_list>;
using IntArrayHandle = UniqueHandle<aclIntArray*, destroy_int_array>;
using StreamHandle = UniqueHandle<aclrtStream, destroy_stream>;
using ExecutorHandle = UniqueHandle<aclOpExecutor*, discard_executor>;

// Device memory from aclrtMalloc (HUGE_FIRST), freed with aclrtFree.
class DeviceBuffer {
 public:
  // `bytes` > 0.
  static Expected<DeviceBuffer> allocate(const AclApi& api, size_t bytes);
  DeviceBuffer() = default;

  void* get() const { return ptr_.get(); }
  size_t size() const { return size_; }
  // Host -> device / device -> host copies of `bytes` at byte `offset` of this buffer.
  Status upload(const AclApi& api, size_t offset, const void* src, size_t bytes);
  Status download(const AclApi& api, size_t offset, void* dst, size_t bytes) const;

 private:
  UniqueHandle<void*, free_device> ptr_;
  size_t size_ = 0;
};

// aclCreateTensor of a contiguous ND tensor (strides in elements, offset 0) at device address
// `data`; kBackendError when nnopbase returns NULL.
Expected<TensorHandle> create_tensor(const AclApi& api, DType dtype, const Shape& shape, void* data);
// aclCreateTensorList over `members`; on success the list owns them (they are released here).
Expected<TensorListHandle> create_tensor_list(const AclApi& api, std::vector<TensorHandle>& members);
Expected<IntArrayHandle> create_int_array(const AclApi& api, const std::vector<int64_t>& values);

}  // namespace opgate::ascend
