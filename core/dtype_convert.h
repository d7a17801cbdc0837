// Bulk conversion of a run of doubles into a tensor's element type: the same bytes as calling
// store_element (Tensor::set) on each element, at memory speed for the common values. Fills compute
// doubles in chunks and write them through here.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/tensor.h"

namespace opgate {

// dst[i] = src[i] converted to `t` with rounding `r`, for i in [0, n); dst holds n elements of t.
void store_elements(DType t, const double* src, int64_t n, void* dst, Rounding r = Rounding::kNearestEven);

// Elements [first, first + n) of `t` (checked in range), as t.set(first + i, src[i]) would write them.
void store_elements(Tensor& t, int64_t first, const double* src, int64_t n);

}  // namespace opgate
