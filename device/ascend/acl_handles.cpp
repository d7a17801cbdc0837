// RAII handles over the runtime and nnopbase calls (spec ascend-abi.md §4, §9 step 5), and the
// conversion of a failed call into a Status with the runtime's own message.
#include "device/ascend/acl_handles.h"

#include <fmt/format.h>

namespace opgate::ascend {

std::string recent_error(const AclApi& api) {
  const char* msg = api.aclGetRecentErrMsg();
  std::string text = msg != nullptr && *msg != '\0' ? std::string(msg) : std::string("no message from the runtime");
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (char& ch : text) ch = ch == '\n' ? ' ' : ch;
  return text;
}

std::string failure_text(const AclApi& api, const std::string& call, int64_t code) {
  return fmt::format("{} failed with {}: {}", call, code, recent_error(api));
}

Status call_failed(const AclApi& api, const std::string& call, int64_t code) {
  return Status(StatusCode::kBackendError, failure_text(api, call, code), code);
}

Status returned_null(const AclApi& api, const std::string& call) {
  return Status(StatusCode::kBackendError, fmt::format("{} returned NULL: {}", call, recent_error(api)));
}

int32_t acl_dtype(DType t) {
  switch (t) {
    case DType::kF64: return acl::kDouble;
    case DType::kF32: return acl::kFloat;
    case DType::kF16: return acl::kFloat16;
    case DType::kBF16: return acl::kBf16;
    case DType::kI8: return acl::kInt8;
    case DType::kU8: return acl::kUint8;
    case DType::kI32: return acl::kInt32;
    case DType::kI64: return acl::kInt64;
    case DType::kU64: return acl::kUint64;
    case DType::kBool: return acl::kBool;
  }
  return -1;
}

void free_device(const AclApi& api, void* ptr) { api.aclrtFree(ptr); }
void destroy_tensor(const AclApi& api, aclTensor* t) { api.aclDestroyTensor(t); }
void destroy_tensor_list(const AclApi& api, aclTensorList* l) { api.aclDestroyTensorList(l); }
void destroy_int_array(const AclApi& api, aclIntArray* a) { api.aclDestroyIntArray(a); }
void destroy_stream(const AclApi& api, aclrtStream s) { api.aclrtDestroyStream(s); }
void discard_executor(const AclApi& api, aclOpExecutor* e) {
  if (api.aclSetAclOpExecutorRepeatable != nullptr && api.aclDestroyAclOpExecutor != nullptr &&
      api.aclSetAclOpExecutorRepeatable(e) == 0) {
    api.aclDestroyAclOpExecutor(e);
  }
}

Expected<DeviceBuffer> DeviceBuffer::allocate(const AclApi& api, size_t bytes) {
  void* ptr = nullptr;
  const aclError rc = api.aclrtMalloc(&ptr, bytes, acl::kMallocHugeFirst);
  if (rc != acl::kSuccess) return call_failed(api, fmt::format("aclrtMalloc({} bytes)", bytes), rc);
  DeviceBuffer b;
  b.ptr_ = UniqueHandle<void*, free_device>(&api, ptr);
  b.size_ = bytes;
  return b;
}

Status DeviceBuffer::upload(const AclApi& api, size_t offset, const void* src, size_t bytes) {
  OPGATE_CHECK(offset <= size_ && bytes <= size_ - offset, "DeviceBuffer::upload out of range");
  if (bytes == 0) return Status::ok();
  auto* dst = static_cast<uint8_t*>(get()) + offset;
  const aclError rc = api.aclrtMemcpy(dst, size_ - offset, src, bytes, acl::kMemcpyHostToDevice);
  if (rc != acl::kSuccess) return call_failed(api, fmt::format("aclrtMemcpy(host to device, {} bytes)", bytes), rc);
  return Status::ok();
}

Status DeviceBuffer::download(const AclApi& api, size_t offset, void* dst, size_t bytes) const {
  OPGATE_CHECK(offset <= size_ && bytes <= size_ - offset, "DeviceBuffer::download out of range");
  if (bytes == 0) return Status::ok();
  const auto* src = static_cast<const uint8_t*>(get()) + offset;
  const aclError rc = api.aclrtMemcpy(dst, bytes, src, bytes, acl::kMemcpyDeviceToHost);
  if (rc != acl::kSuccess) return call_failed(api, fmt::format("aclrtMemcpy(device to host, {} bytes)", bytes), rc);
  return Status::ok();
}

Expected<TensorHandle> create_tensor(const AclApi& api, DType dtype, const Shape& shape, void* data) {
  const std::vector<int64_t> strides = contiguous_strides(shape);
  aclTensor* t = api.aclCreateTensor(shape.data(), shape.size(), acl_dtype(dtype), strides.data(), 0,
                                     acl::kFormatNd, shape.data(), shape.size(), data);
  if (t == nullptr) {
    return returned_null(api, fmt::format("aclCreateTensor({} {})", dtype_name(dtype), shape_to_string(shape)));
  }
  return TensorHandle(&api, t);
}

Expected<TensorListHandle> create_tensor_list(const AclApi& api, std::vector<TensorHandle>& members) {
  std::vector<const aclTensor*> raw;
  raw.reserve(members.size());
  for (const auto& m : members) raw.push_back(m.get());
  aclTensorList* l = api.aclCreateTensorList(raw.data(), raw.size());
  if (l == nullptr) return returned_null(api, fmt::format("aclCreateTensorList({} tensors)", raw.size()));
  for (auto& m : members) m.release();
  return TensorListHandle(&api, l);
}

Expected<IntArrayHandle> create_int_array(const AclApi& api, const std::vector<int64_t>& values) {
  aclIntArray* a = api.aclCreateIntArray(values.data(), values.size());
  if (a == nullptr) return returned_null(api, fmt::format("aclCreateIntArray({} values)", values.size()));
  return IntArrayHandle(&api, a);
}

}  // namespace opgate::ascend
