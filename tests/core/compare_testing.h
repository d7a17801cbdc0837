// Shared by the comparator's tests (compare_*_test.cpp): tensors from value lists and the check
// plans they build on, so each test states only what differs.
#pragma once

#include <utility>
#include <vector>

#include "core/compare.h"
#include "core/tensor.h"

namespace opgate::compare_testing {

inline Tensor f64(Shape shape, std::vector<double> v) { return Tensor::from_values(DType::kF64, std::move(shape), v); }
inline Tensor of(DType t, Shape shape, std::vector<double> v) { return Tensor::from_values(t, std::move(shape), v); }

inline OutputCheck exact(DType t, Rounding r = Rounding::kNearestEven) {
  OutputCheck c;
  c.name = "out";
  c.kind = CheckKind::kExact;
  c.device_dtype = t;
  c.rounding = r;
  return c;
}

inline OutputCheck tolerance(DType t, Standard s) {
  OutputCheck c;
  c.name = "out";
  c.kind = CheckKind::kTolerance;
  c.device_dtype = t;
  c.tol.standard = s;
  return c;
}

}  // namespace opgate::compare_testing
