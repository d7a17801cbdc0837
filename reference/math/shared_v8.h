// The eight-double vector (GCC vector extension, no intrinsics) with its load, store and absolute
// value, shared by the vector formulations shared_simd_vec.h and shared_attention_vec.h. Always
// inlined into their path functions (reference/math/<arch>/*_<isa>.cpp), which is where the vector
// ISA is chosen: one zmm on AVX-512, two ymm on AVX2, four xmm or q registers on SSE2 and NEON.
#pragma once

#include <cstdint>

#include "core/vector_memory.h"

// Vectors pass by value only between always-inlined functions of one translation unit (see
// core/vector_memory.h).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace opgate::math {

typedef double V8 __attribute__((vector_size(64)));
typedef int64_t I8 __attribute__((vector_size(64)));

OPGATE_INLINE V8 load8(const double* p) { return vec::load<V8>(p); }
OPGATE_INLINE void store8(double* p, V8 v) { vec::store(p, v); }
// |v| by clearing the sign bits: exact for every value, NaN payloads kept.
OPGATE_INLINE V8 abs8(V8 v) { return reinterpret_cast<V8>(reinterpret_cast<I8>(v) & INT64_MAX); }

}  // namespace opgate::math

// The lanes of x (indices 0..7) and y (8..15) picked by constant indices: __builtin_shufflevector,
// or __builtin_shuffle with the same indices where GCC < 12 lacks it (the same permutation).
#if !defined(__clang__) && defined(__GNUC__) && __GNUC__ < 12
#define OPGATE_SHUFFLE8(x, y, ...) __builtin_shuffle(x, y, ::opgate::math::I8{__VA_ARGS__})
#else
#define OPGATE_SHUFFLE8(x, y, ...) __builtin_shufflevector(x, y, __VA_ARGS__)
#endif

#pragma GCC diagnostic pop
