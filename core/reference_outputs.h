// What a reference implementation returns besides the expected values: the per-element
// magnitude its `bound` tolerance needs and the care mask of defined elements (DESIGN.md §6).
#pragma once

#include "core/tensor.h"

#include <cstdint>
#include <map>
#include <string>

namespace opgate {

// Elements of one output that the reference declares undefined (care 0) because the kernel's own
// precision can overflow on the way to them, although the exact value is finite or its sign is
// known (issue 22): no fp16/fp32 kernel is bound to return a given value there, and Inf or NaN
// are what a correct one may produce. How many, and why, for the result's message and metrics.
struct BeyondRange {
  int64_t count = 0;
  std::string reason;
};

struct RefOutputs {
  // aclnn output name -> expected values: f64 for floating outputs (before rounding to the device
  // dtype); integer outputs exactly in their device dtype.
  TensorMap expected;
  // Optional, f64, same shape: the magnitude of the accumulation behind each element
  // (e.g. sum_j |x_j * g_j|); absent means 0 (the element is a single rounding of an exact value).
  TensorMap magnitude;
  // Optional, u8, same shape: 1 = defined by the API and compared, 0 = undefined. Absent = all 1.
  TensorMap care;
  // Optional, f64, same shape: an extra allowance per element kept apart from `magnitude`
  // (golden-format.md, `.slack.npy`). Golden files carry it; no reference returns one yet (MoeFFN
  // folds its near-tie allowance into `magnitude`), and the comparator does not read it.
  TensorMap slack;
  // Optional, per output: the elements above whose care the kernel's precision set to 0.
  std::map<std::string, BeyondRange> beyond_range;
};

}  // namespace opgate
