// Output buffers pre-filled with a poison pattern and surrounded by guard bytes, so a kernel that
// writes outside its output, or leaves a defined element unwritten, is caught (DESIGN.md §6).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/tensor.h"

namespace opgate {

// The poison bit pattern of one element: a quiet NaN with a payload for floating types (no
// arithmetic result produces it), 0xA5 bytes for integers.
uint64_t poison_bits(DType t);

struct GuardedBuffer {
  Tensor tensor;                 // view of the body; what the backend writes into
  std::shared_ptr<Storage> storage;
  size_t guard_bytes = 0;
};

// A poisoned body of dtype/shape with `guard_bytes` of guard pattern on each side.
GuardedBuffer make_guarded(DType dtype, const Shape& shape, size_t guard_bytes = 256);
// "" if both guards are intact, else which side and how many bytes changed.
std::string check_guards(const GuardedBuffer& b);

}  // namespace opgate
