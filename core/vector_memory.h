// Helpers of the hand-vectorised kernels (GCC vector extensions, runtime ISA dispatch): a whole
// vector loaded from or stored to unaligned memory by memcpy, which compiles to one move and has no
// alignment or aliasing undefined behaviour; always inlined, because a call would leave the vector
// in memory and defeat the target attribute of the caller.
#pragma once

#include <cstring>

#define OPGATE_INLINE inline __attribute__((always_inline))

// The vectors pass by value only between always-inlined functions of one translation unit, so
// GCC's note that such a signature changes the ABI without the target ISA does not apply.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace opgate::vec {

template <typename V, typename T>
OPGATE_INLINE V load(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename V, typename T>
OPGATE_INLINE void store(T* p, V v) {
  std::memcpy(p, &v, sizeof v);
}

}  // namespace opgate::vec

#pragma GCC diagnostic pop
