// Output buffers pre-filled with a poison pattern and surrounded by guard bytes, so a kernel that
// writes outside its output, or leaves a defined element unwritten, is caught (DESIGN.md §6); and
// digests of the inputs, so a kernel that writes into an input is caught too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

// An input image as it was before the device ran, kept as digests rather than a copy (a copy of
// every input costs an allocation, page faults and a compare per byte): XXH3-64 of each
// kDigestChunkBytes chunk of the bytes, the last chunk shorter. The chunks are fixed, so the
// digests do not depend on how many threads hashed them. A write that changes a chunk goes unseen
// only if the new bytes hash to the same 64 bits (probability 2^-64 for bytes unrelated to XXH3).
constexpr size_t kDigestChunkBytes = size_t{1} << 20;
struct InputDigest {
  size_t nbytes = 0;
  std::vector<uint64_t> chunks;
};
InputDigest digest_input(const Tensor& t);
// "" if `now` has the bytes `before` was taken from; else the byte range of the first chunk whose
// digest changed, "first change within bytes [a, b) of n" (or the changed size).
std::string input_change(const InputDigest& before, const Tensor& now);

}  // namespace opgate
