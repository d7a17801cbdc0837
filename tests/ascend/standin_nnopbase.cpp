// Stand-in nnopbase (libnnopbase.so): aclTensor, aclIntArray and aclTensorList handles with the
// checks a caller must satisfy (a 32-byte aligned device address whose allocation holds the whole
// view, known dtype and format enums, lists that own their tensors) and executor disposal.
#include <algorithm>

#include <fmt/format.h>

#include "standin.h"

#define STANDIN_DECLARE(required, ret, name, params) STANDIN_API ret name params;
OPGATE_ACL_NNOPBASE_SYMBOLS(STANDIN_DECLARE)
#undef STANDIN_DECLARE

using standin::Kind;

namespace {

// aclDataType values of spec ascend-abi.md §6.1 and their sizes (0 = sub-byte or unused).
int dtype_bytes(int32_t t) {
  switch (t) {
    case 0: case 3: case 8: return 4;
    case 1: case 6: case 7: case 27: return 2;
    case 2: case 4: case 12: case 34: case 35: case 36: case 37: return 1;
    case 9: case 10: case 11: case 16: return 8;
    case 17: return 16;
    case 33: return 4;
    default: return 0;
  }
}

bool known_format(int32_t f) {
  for (int32_t k : {0, 1, 2, 3, 4, 12, 16, 27, 29, 30, 32, 33, 35, 47, 50, 51, 52, 53, 54}) {
    if (f == k) return true;
  }
  return false;
}

template <class T>
T* null_with(const std::string& why) {
  standin::set_error("stand-in: " + why);
  standin::trace("invalid: " + why);
  return nullptr;
}

int invalid(const std::string& why) {
  standin::set_error("stand-in: " + why);
  standin::trace("invalid: " + why);
  return opgate::acl::kAclnnParamNullptr;
}

}  // namespace

aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, int32_t dataType, const int64_t* stride,
                           int64_t offset, int32_t format, const int64_t* storageDims, uint64_t storageDimsNum,
                           void* tensorData) {
  if (standin::require_context("aclCreateTensor", false) != 0) return nullptr;
  if (standin::injected_failure("aclCreateTensor", 0)) return nullptr;
  if (viewDimsNum > 8 || storageDimsNum > 8) return null_with<aclTensor>("aclCreateTensor with more than 8 dims");
  if ((viewDimsNum > 0 && (viewDims == nullptr || stride == nullptr)) || (storageDimsNum > 0 && storageDims == nullptr)) {
    return null_with<aclTensor>("aclCreateTensor with NULL dims or strides");
  }
  const int size = dtype_bytes(dataType);
  if (size == 0) return null_with<aclTensor>(fmt::format("aclCreateTensor dtype {} unknown", dataType));
  if (!known_format(format)) return null_with<aclTensor>(fmt::format("aclCreateTensor format {} unknown", format));
  auto* t = new aclTensor();
  t->dims.assign(viewDims, viewDims + viewDimsNum);
  t->strides.assign(stride, stride + viewDimsNum);
  t->storage_dims.assign(storageDims, storageDims + storageDimsNum);
  t->offset = offset;
  t->dtype = dataType;
  t->format = format;
  t->data = tensorData;
  // The farthest element the view reaches, and the storage's extent, must lie in the allocation.
  bool empty = false;
  int64_t last = offset, storage = 1;
  for (size_t i = 0; i < t->dims.size(); ++i) {
    if (t->dims[i] <= 0) empty = true;
    else last += (t->dims[i] - 1) * t->strides[i];
  }
  for (int64_t d : t->storage_dims) storage *= d > 0 ? d : 0;
  std::string where = "NULL";
  if (tensorData != nullptr) {
    if (reinterpret_cast<uintptr_t>(tensorData) % opgate::acl::kTensorAlignment != 0) {
      delete t;
      return null_with<aclTensor>("aclCreateTensor address not 32-byte aligned");
    }
    const auto alloc = standin::device_range(tensorData, 1);
    if (!alloc) {
      delete t;
      return null_with<aclTensor>("aclCreateTensor address is not device memory");
    }
    const size_t reach = empty ? 0 : static_cast<size_t>(last + 1) * static_cast<size_t>(size);
    const size_t storage_bytes = static_cast<size_t>(storage) * static_cast<size_t>(size);
    if (offset < 0 || last < 0 || !standin::device_range(tensorData, std::max(reach, storage_bytes))) {
      delete t;
      return null_with<aclTensor>(fmt::format("aclCreateTensor view {} strides {} offset {} of dtype {} exceeds its "
                                              "device allocation",
                                              standin::shape_text(t->dims), standin::shape_text(t->strides), offset,
                                              dataType));
    }
    where = fmt::format("+{}", static_cast<uint8_t*>(tensorData) - alloc->first);
  }
  standin::add_object(Kind::kTensor, t);
  standin::trace(fmt::format("aclCreateTensor dtype={} dims={} strides={} offset={} format={} storage={} data={}",
                             dataType, standin::shape_text(t->dims), standin::shape_text(t->strides), offset, format,
                             standin::shape_text(t->storage_dims), where));
  return t;
}

aclnnStatus aclDestroyTensor(const aclTensor* tensor) {
  if (!standin::is_live(Kind::kTensor, tensor)) return invalid("aclDestroyTensor of an unknown or destroyed tensor");
  if (tensor->in_list) return invalid("aclDestroyTensor of a tensor owned by a tensor list");
  standin::remove_object(Kind::kTensor, tensor);
  delete tensor;
  return 0;
}

aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size) {
  if (standin::injected_failure("aclCreateIntArray", 0)) return nullptr;
  if (size > 0 && value == nullptr) return null_with<aclIntArray>("aclCreateIntArray(NULL, n > 0)");
  auto* a = new aclIntArray{std::vector<int64_t>(value, value + size)};
  standin::add_object(Kind::kIntArray, a);
  standin::trace(fmt::format("aclCreateIntArray {}", standin::shape_text(a->values)));
  return a;
}

aclnnStatus aclDestroyIntArray(const aclIntArray* array) {
  if (!standin::remove_object(Kind::kIntArray, array)) return invalid("aclDestroyIntArray of an unknown array");
  delete array;
  return 0;
}

aclTensorList* aclCreateTensorList(const aclTensor* const* value, uint64_t size) {
  if (standin::injected_failure("aclCreateTensorList", 0)) return nullptr;
  if (size > 0 && value == nullptr) return null_with<aclTensorList>("aclCreateTensorList(NULL, n > 0)");
  for (uint64_t i = 0; i < size; ++i) {
    if (value[i] != nullptr && (!standin::is_live(Kind::kTensor, value[i]) || value[i]->in_list)) {
      return null_with<aclTensorList>(fmt::format("aclCreateTensorList member {} is not a free tensor", i));
    }
  }
  auto* l = new aclTensorList();
  for (uint64_t i = 0; i < size; ++i) {
    auto* t = const_cast<aclTensor*>(value[i]);
    if (t != nullptr) t->in_list = true;
    l->tensors.push_back(t);
  }
  standin::add_object(Kind::kTensorList, l);
  standin::trace(fmt::format("aclCreateTensorList {}", size));
  return l;
}

aclnnStatus aclDestroyTensorList(const aclTensorList* array) {
  if (!standin::remove_object(Kind::kTensorList, array)) return invalid("aclDestroyTensorList of an unknown list");
  for (aclTensor* t : array->tensors) {
    if (t == nullptr) continue;
    standin::remove_object(Kind::kTensor, t);
    delete t;
  }
  delete array;
  return 0;
}

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor) {
  if (!standin::is_live(Kind::kExecutor, executor)) return invalid("aclSetAclOpExecutorRepeatable of an unknown executor");
  executor->repeatable = true;
  return 0;
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor) {
  if (!standin::is_live(Kind::kExecutor, executor) || !executor->repeatable) {
    return invalid("aclDestroyAclOpExecutor of an unknown or non-repeatable executor");
  }
  standin::remove_object(Kind::kExecutor, executor);
  standin::trace("aclDestroyAclOpExecutor " + executor->op);
  delete executor;
  return 0;
}
