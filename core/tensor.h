// Tensor: typed, shaped bytes in the real device dtype (style-and-layout.md B3). Storage is
// contiguous row-major and shared between copies; `clone()` makes an independent copy.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/storage.h"

namespace opgate {

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& shape);
std::string shape_to_string(const Shape& shape);  // "[2, 3]"
// Row-major element strides of a contiguous tensor of this shape.
std::vector<int64_t> contiguous_strides(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor.
  static Tensor zeros(DType dtype, Shape shape);
  // Uninitialised tensor (torch.empty): for callers that write every byte before reading any.
  static Tensor empty(DType dtype, Shape shape);
  // Every element set to `value` (rounded to nearest even).
  static Tensor full(DType dtype, Shape shape, double value);
  // Takes ownership of `bytes`, which must hold exactly numel * dtype_size bytes.
  static Expected<Tensor> from_bytes(DType dtype, Shape shape, std::vector<uint8_t> bytes);
  // A view of `storage` starting at `byte_offset` (used for guarded output buffers).
  static Tensor view(DType dtype, Shape shape, std::shared_ptr<Storage> storage, size_t byte_offset);
  // 1-D tensors from host values (tests and hand examples).
  static Tensor from_values(DType dtype, Shape shape, const std::vector<double>& values);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_.at(static_cast<size_t>(i)); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * element_size_; }
  std::vector<int64_t> strides() const { return contiguous_strides(shape_); }

  // Never null for a defined tensor, even an empty one: memcpy/memset of 0 bytes from a null
  // pointer is undefined behaviour (UBSan reports it), so empty storage points at a shared byte
  // (Storage::data()).
  uint8_t* data() { return storage_ ? bytes() + offset_ : nullptr; }
  const uint8_t* data() const { return storage_ ? bytes() + offset_ : nullptr; }
  template <class T>
  T* ptr() { return reinterpret_cast<T*>(data()); }
  template <class T>
  const T* ptr() const { return reinterpret_cast<const T*>(data()); }

  // Element by flat row-major index, as double / written with rounding to the dtype.
  double get(int64_t flat) const { return load_element(dtype_, element(flat)); }
  void set(int64_t flat, double v, Rounding r = Rounding::kNearestEven) {
    store_element(dtype_, element(flat), v, r);
  }
  uint64_t bits(int64_t flat) const { return load_bits(dtype_, element(flat)); }
  void set_bits(int64_t flat, uint64_t b) { store_bits(dtype_, element(flat), b); }
  // Element by multi-index (checked).
  double at(const std::vector<int64_t>& index) const { return get(flat_index(index)); }
  int64_t flat_index(const std::vector<int64_t>& index) const;
  std::vector<int64_t> unravel(int64_t flat) const;

  Tensor clone() const;
  // Same storage, new shape of equal numel (checked).
  Tensor reshaped(Shape shape) const;
  // Same bytes read as another dtype of equal element size (bf16 <-> u16 for .npy files).
  Tensor reinterpreted(DType dtype) const;
  // Every element converted to `dtype` with rounding `r`.
  Tensor converted(DType dtype, Rounding r = Rounding::kNearestEven) const;
  bool bytes_equal(const Tensor& other) const;  // same dtype, shape and bytes

 private:
  uint8_t* element(int64_t flat) const;
  void set_layout(DType dtype, Shape shape);  // the only writer of dtype_, shape_ and their caches

  DType dtype_ = DType::kF32;
  Shape shape_;
  int64_t numel_ = 1;        // cached shape_numel(shape_)
  size_t element_size_ = 4;  // cached dtype_size(dtype_)
  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0;

  uint8_t* bytes() const { return storage_->data(); }
};

// name -> tensor; names are the aclnn parameter names verbatim.
using TensorMap = std::map<std::string, Tensor>;

// Descriptor of one aclnn tensor argument: what `validate` sees, like the real API.
struct TensorSpec {
  DType dtype = DType::kF32;
  Shape shape;
  bool present = true;  // false: the optional argument is passed as nullptr
  bool operator==(const TensorSpec& o) const {
    return dtype == o.dtype && shape == o.shape && present == o.present;
  }
};
using SpecMap = std::map<std::string, TensorSpec>;

}  // namespace opgate
