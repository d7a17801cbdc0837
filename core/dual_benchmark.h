// The dual-benchmark standard of one output (issue 25, core/ascend_standard.h): the device's
// errors against the fp64 golden set beside a low-precision twin's errors against the same golden.
// opgate's twin is its clean emulator, run on the same packed inputs (the runner's twin stage);
// the figures are the comparator's own MARE, MERE and RMSE.
#pragma once

#include "core/ascend_standard.h"
#include "core/compare.h"
#include "core/tensor.h"

namespace opgate {

// `device` is compare_output's result for `got`; `twin` holds the twin's output in the device
// dtype. Not applicable to exact and integer outputs, or outside Ascend's scope (standards_na).
StandardVerdict dual_benchmark_output(const OutputCheck& check, const CompareResult& device, const Tensor& expected,
                                      const Tensor& got, const Tensor& twin, const Tensor& magnitude,
                                      const Tensor& care);

// mean((a - t) / max(|t|, 1)) over the cared elements where both are finite: the device's error
// balance measured from the twin.
double error_balance_against(const Tensor& got, const Tensor& twin, const Tensor& care);

}  // namespace opgate
