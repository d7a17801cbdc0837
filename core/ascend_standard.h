// The accuracy standards Ascend's own kernel tests gate on (issue 25), next to opgate's `bound`:
//   ascend-v0.3           single benchmark ("新精度标准" v0.3): every element within
//                         max(|g|, 1) * 2^ERR_BASE of the high-precision golden g, and the error
//                         balance EB = mean((a - g) / max(|g|, 1)) within 2^EB_BASE;
//   ascend-dual-permille  the old standard ("双千分之五" / "双千分之一"): the share of elements with
//                         |a - g| > max(rate * |g|, rate) at most `share`, and the largest relative
//                         error of those elements below `cap`;
//   dual-benchmark        ("双标杆") the device's MARE, MERE and RMSE against the golden, each at
//                         most a fixed multiple of a low-precision twin's (opgate's emulator, or a
//                         third-party run), and the device's EB against the twin within 2^EB_BASE.
// Every constant, with its source, is in kStandardConstants (ascend_standard.cpp) and in
// reports/README.md. The statistics are gathered in compare_output's one pass (AscendStats).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.h"

namespace opgate {

// The operator classes of the v0.3 standard (ATB tests/apitest/kernelstest/precision_calcu.py,
// OpTypes): what an output's computation is, which picks its error exponent.
enum class OpClass {
  kMove,             // data movement, gather/scatter: binary equality
  kCast,             // dtype conversion: binary equality
  kComputeInteger,   // integer arithmetic, indices, counts: binary equality
  kComputeQuant,     // a quantised integer result: at most 1 step; its float path as kComputeFloat
  kComputeFloat,     // floating compute (matmul, elementwise, reductions)
  kCvFusion,         // cube + vector fusion (attention: two matmuls and a softmax in one kernel)
};

const char* op_class_name(OpClass c);
std::optional<OpClass> parse_op_class(const std::string& name);

// The v0.3 limits of one output: binary equality (integer classes), or the per-element error
// exponent and the error-balance exponent of its class and dtype, loosened by the accumulation
// count (the number of terms summed into one output element, from the operator's reference).
struct V03Limits {
  bool binary_equal = false;
  double err = 0;  // per element: |a - g| <= err * max(|g|, 1)
  double eb = 0;   // |EB| <= eb
  int loosened = 0;  // exponent steps added for the accumulation count
};
V03Limits v03_limits(OpClass c, DType device, int64_t accumulations);

// The old standard's parameters: fp16 allows 1 in 1000 elements beyond 5 in 1000 of error, bf16
// and int8 5 in 1000 (ATB test_paged_attention_common.py, compare_output_data); the cap on the
// largest relative error is precision_compare.py's max_diff_hd.
struct DualPermille {
  double rate = 0.005;
  double share = 0.005;
  double cap = 0.1;
};
DualPermille dual_permille_for(DType device);

// One output's statistics for the standards above, over its finite compared elements (a non-finite
// mismatch fails every standard and is counted by the comparator). Blocks merge in element order.
struct AscendStats {
  int64_t n = 0;
  double max_abs_err = 0;        // max |a - g| (an integer output's steps)
  double max_scaled_err = 0;     // max |a - g| / max(|g|, 1)
  double sum_scaled_signed = 0;  // sum (a - g) / max(|g|, 1)
  int64_t over_rate = 0;         // elements with |a - g| > max(rate |g|, rate)
  double max_rel_over = 0;       // their largest |a - g| / max(|a|, |g|, 2^-14 / rate)
  void add(double golden, double actual, double rate);
  void merge(const AscendStats& next);
  double eb() const { return n > 0 ? sum_scaled_signed / static_cast<double>(n) : 0.0; }
};

struct StandardVerdict {
  bool applies = true;  // false: "not applicable" (say why in `detail`)
  bool passed = true;
  std::string detail;   // one line: the figures against their limits
};

// ascend-v0.3 on a floating output (integer classes are judged by their exact / quantized check).
StandardVerdict judge_v03(const AscendStats& s, const V03Limits& limits);
StandardVerdict judge_dual_permille(const AscendStats& s, const DualPermille& p);

// dual-benchmark: the device's and the twin's errors against the same golden.
struct ErrorFigures {
  double mare = 0, mere = 0, rmse = 0;
};
struct DualBenchmarkLimits {
  double mare_ratio = 10, mere_ratio = 2, rmse_ratio = 2;
  double floor = 0;  // a twin error below this counts as this (2^ERR_BASE of the class and dtype)
  double eb = 0;     // |EB of the device against the twin| <= eb
};
DualBenchmarkLimits dual_benchmark_limits(OpClass c, DType device);
StandardVerdict judge_dual_benchmark(const ErrorFigures& device, const ErrorFigures& twin,
                                     double eb_device_vs_twin, const DualBenchmarkLimits& limits);

}  // namespace opgate
