// What a reference implementation returns besides the expected values: the per-element
// magnitude its `bound` tolerance needs and the care mask of defined elements (DESIGN.md §6).
#pragma once

#include "core/tensor.h"

namespace opgate {

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
};

}  // namespace opgate
