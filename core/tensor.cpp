// Tensor: contiguous row-major storage in the device dtype, with checked element access
// (style-and-layout.md B3).

#include "core/tensor.h"

#include <cstring>
#include <limits>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace opgate {
namespace {

// numel of `shape`, or a parse error when an extent is negative or the product overflows int64
// (shapes that reach from_bytes come from files).
Expected<int64_t> checked_numel(const Shape& shape) {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      return parse_error(
          fmt::format("shape {}: extent {} (axis {}) is negative", shape_to_string(shape), shape[i], i));
    }
    if (__builtin_mul_overflow(n, shape[i], &n)) {
      return parse_error(fmt::format("shape {}: element count overflows int64", shape_to_string(shape)));
    }
  }
  return n;
}

// Element types that are integers in the arithmetic sense (bool is excluded: it converts by != 0).
bool is_counting_integer(DType t) { return is_integer(t) && t != DType::kBool; }

int64_t integer_min(DType t) {
  switch (t) {
    case DType::kI8: return -128;
    case DType::kI32: return std::numeric_limits<int32_t>::min();
    case DType::kI64: return std::numeric_limits<int64_t>::min();
    default: return 0;
  }
}

uint64_t integer_max(DType t) {
  switch (t) {
    case DType::kI8: return 127;
    case DType::kU8: return 255;
    case DType::kI32: return static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
    case DType::kI64: return static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    default: return std::numeric_limits<uint64_t>::max();
  }
}

// Integer to integer conversion with saturation, exact over the whole int64/uint64 range (the
// double path would round values beyond 2^53).
uint64_t convert_integer_bits(DType from, DType to, uint64_t raw) {
  bool negative = false;
  uint64_t magnitude = 0;
  switch (from) {
    case DType::kI8: {
      const auto v = static_cast<int8_t>(raw);
      negative = v < 0;
      magnitude = negative ? static_cast<uint64_t>(-static_cast<int64_t>(v)) : static_cast<uint64_t>(v);
      break;
    }
    case DType::kI32: {
      const auto v = static_cast<int32_t>(raw);
      negative = v < 0;
      magnitude = negative ? static_cast<uint64_t>(-static_cast<int64_t>(v)) : static_cast<uint64_t>(v);
      break;
    }
    case DType::kI64: {
      const auto v = static_cast<int64_t>(raw);
      negative = v < 0;
      // 0 - (unsigned)v is the magnitude even for INT64_MIN.
      magnitude = negative ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
      break;
    }
    default: magnitude = raw; break;  // u8, u64: already zero-extended
  }
  if (negative) {
    const uint64_t min_magnitude = uint64_t{0} - static_cast<uint64_t>(integer_min(to));
    if (magnitude >= min_magnitude) return static_cast<uint64_t>(integer_min(to));
    return uint64_t{0} - magnitude;  // two's complement of -magnitude; store_bits truncates it
  }
  return magnitude > integer_max(to) ? integer_max(to) : magnitude;
}

}  // namespace

int64_t shape_numel(const Shape& shape) {
  Expected<int64_t> n = checked_numel(shape);
  OPGATE_CHECK(n.has_value(), n.status().message());
  return *n;
}

std::string shape_to_string(const Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  // Unsigned arithmetic: an empty tensor may have extents whose full product does not fit, and its
  // strides are never used to address memory, so wrapping is harmless where overflow would be UB.
  std::vector<int64_t> strides(shape.size(), 1);
  uint64_t stride = 1;
  for (size_t i = shape.size(); i-- > 1;) {
    stride *= static_cast<uint64_t>(shape[i]);
    strides[i - 1] = static_cast<int64_t>(stride);
  }
  return strides;
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t;
  t.set_layout(dtype, std::move(shape));
  t.storage_ = Storage::allocate(t.nbytes(), Storage::Init::kZeroed);
  return t;
}

Tensor Tensor::empty(DType dtype, Shape shape) {
  Tensor t;
  t.set_layout(dtype, std::move(shape));
  t.storage_ = Storage::allocate(t.nbytes(), Storage::Init::kUninitialized);
  return t;
}

Tensor Tensor::full(DType dtype, Shape shape, double value) {
  Tensor t = empty(dtype, std::move(shape));
  uint8_t element_bytes[8] = {};
  store_element(dtype, element_bytes, value);
  fill_pattern(t.data(), t.nbytes(), element_bytes, dtype_size(dtype));
  return t;
}

Expected<Tensor> Tensor::from_bytes(DType dtype, Shape shape, std::vector<uint8_t> bytes) {
  Expected<int64_t> numel = checked_numel(shape);
  if (!numel) return numel.status();
  const size_t size = dtype_size(dtype);
  const auto count = static_cast<uint64_t>(*numel);
  if (count > std::numeric_limits<size_t>::max() / size) {
    return parse_error(fmt::format("{} {}: byte count overflows", dtype_name(dtype), shape_to_string(shape)));
  }
  const size_t expected = static_cast<size_t>(count) * size;
  if (bytes.size() != expected) {
    return parse_error(fmt::format("{} {}: expected {} bytes ({} elements x {} bytes), got {}",
                                   dtype_name(dtype), shape_to_string(shape), expected, count,
                                   size, bytes.size()));
  }
  Tensor t;
  t.set_layout(dtype, std::move(shape));
  t.storage_ = Storage::adopt(std::move(bytes));
  return t;
}

Tensor Tensor::view(DType dtype, Shape shape, std::shared_ptr<Storage> storage, size_t byte_offset) {
  OPGATE_CHECK(storage != nullptr, "view of null storage");
  Tensor t;
  t.set_layout(dtype, std::move(shape));
  const size_t nbytes = t.nbytes();
  OPGATE_CHECK(byte_offset <= storage->size() && nbytes <= storage->size() - byte_offset,
               fmt::format("view of {} bytes at offset {} exceeds storage of {} bytes", nbytes,
                           byte_offset, storage->size()));
  t.storage_ = std::move(storage);
  t.offset_ = byte_offset;
  return t;
}

Tensor Tensor::from_values(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t = empty(dtype, std::move(shape));
  OPGATE_CHECK(static_cast<int64_t>(values.size()) == t.numel(),
               fmt::format("{} values for shape {}", values.size(), shape_to_string(t.shape_)));
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  return t;
}

int64_t Tensor::flat_index(const std::vector<int64_t>& index) const {
  OPGATE_CHECK(index.size() == shape_.size(),
               fmt::format("index {} has rank {}, tensor {} has rank {}", shape_to_string(index),
                           index.size(), shape_to_string(shape_), shape_.size()));
  int64_t flat = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    OPGATE_CHECK(index[i] >= 0 && index[i] < shape_[i],
                 fmt::format("index {} out of range for shape {}", shape_to_string(index),
                             shape_to_string(shape_)));
    flat = flat * shape_[i] + index[i];
  }
  return flat;
}

std::vector<int64_t> Tensor::unravel(int64_t flat) const {
  OPGATE_CHECK(flat >= 0 && flat < numel(),
               fmt::format("flat index {} out of range for shape {}", flat, shape_to_string(shape_)));
  std::vector<int64_t> index(shape_.size(), 0);
  for (size_t i = shape_.size(); i-- > 0;) {
    index[i] = flat % shape_[i];
    flat /= shape_[i];
  }
  return index;
}

Tensor Tensor::clone() const {
  if (!defined()) return Tensor();
  Tensor t = *this;
  t.storage_ = Storage::allocate(nbytes(), Storage::Init::kUninitialized);
  t.offset_ = 0;
  std::memcpy(t.data(), data(), nbytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  OPGATE_CHECK(shape_numel(shape) == numel(),
               fmt::format("reshape {} to {} changes the element count", shape_to_string(shape_),
                           shape_to_string(shape)));
  Tensor t = *this;
  t.set_layout(dtype_, std::move(shape));
  return t;
}

Tensor Tensor::reinterpreted(DType dtype) const {
  OPGATE_CHECK(dtype_size(dtype) == dtype_size(dtype_),
               fmt::format("reinterpret {} as {} changes the element size", dtype_name(dtype_),
                           dtype_name(dtype)));
  Tensor t = *this;
  t.set_layout(dtype, shape_);
  return t;
}

Tensor Tensor::converted(DType dtype, Rounding r) const {
  OPGATE_CHECK(defined(), "conversion of an undefined tensor");
  if (dtype == dtype_) return clone();
  Tensor out = empty(dtype, shape_);
  const bool exact_integer = is_counting_integer(dtype_) && is_counting_integer(dtype);
  const int64_t n = numel();
  for (int64_t i = 0; i < n; ++i) {
    if (exact_integer) {
      out.set_bits(i, convert_integer_bits(dtype_, dtype, bits(i)));
    } else {
      out.set(i, get(i), r);
    }
  }
  return out;
}

bool Tensor::bytes_equal(const Tensor& other) const {
  if (defined() != other.defined()) return false;
  if (!defined()) return true;
  if (dtype_ != other.dtype_ || shape_ != other.shape_) return false;
  return nbytes() == 0 || std::memcmp(data(), other.data(), nbytes()) == 0;
}

void Tensor::set_layout(DType dtype, Shape shape) {
  dtype_ = dtype;
  shape_ = std::move(shape);
  numel_ = shape_numel(shape_);
  element_size_ = dtype_size(dtype_);
}

uint8_t* Tensor::element(int64_t flat) const {
  // Hot path of every generic loop: the bounds check uses the cached count and formats its
  // message only on failure.
  if (storage_ == nullptr || flat < 0 || flat >= numel_) {
    check_failed(__FILE__, __LINE__, "flat index in range",
                 fmt::format("flat index {} out of range for shape {}{}", flat, shape_to_string(shape_),
                             storage_ == nullptr ? " (undefined tensor)" : ""));
  }
  return storage_->data() + offset_ + static_cast<size_t>(flat) * element_size_;
}

}  // namespace opgate
