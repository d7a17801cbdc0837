// Per-tensor fill overrides from a case's "tensors" section: after the operator's own fill, a
// tensor's values are replaced by an explicit list or by one class of extreme values, so that a
// case can put subnormals, near-max magnitudes, signed zeros, NaN or Inf into any float input.
//   "tensors": {"x": {"fill": {"values": [0.0, -0.0, 1e-40, "inf"]}}}
//   "tensors": {"x": {"fill": {"extreme": "subnormal"}}}
// `values` is cycled over the tensor's elements in row-major order (a list longer than the tensor
// is an error); "nan", "inf" and "-inf" are written as strings (JSON has no such numbers). Each
// value is rounded to the tensor's dtype (nearest even); a value that would overflow to Inf, flush
// to zero, or (integer dtypes) is not an integer in range, is an error.
// `extreme` classes replace every other element (flat indices 0, 2, 4, ...) with fixed bit patterns,
// in turn (float dtypes only; see extreme_pattern); the operator's values stay in between.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/problem.h"
#include "core/status.h"
#include "core/tensor.h"

namespace opgate {

struct Case;

enum class ExtremeClass { kSubnormal, kNearMax, kSignedZero, kInf, kNan };
inline constexpr ExtremeClass kAllExtremeClasses[] = {ExtremeClass::kSubnormal, ExtremeClass::kNearMax,
                                                      ExtremeClass::kSignedZero, ExtremeClass::kInf,
                                                      ExtremeClass::kNan};
// "subnormal", "near_max", "signed_zero", "inf", "nan".
const char* extreme_class_name(ExtremeClass c);
Expected<ExtremeClass> parse_extreme_class(const std::string& name);

// The raw bit patterns a class cycles through for a float dtype (kF16, kBF16, kF32, kF64):
//   subnormal:   +min, -min, +max, -max, +mid, -mid of the subnormals (bits 1, 2^m-1, 2^(m-1))
//   near_max:    +max, -max, +next below max, -next below max
//   signed_zero: +0, -0
//   inf:         +Inf, -Inf
//   nan:         +quiet NaN, -quiet NaN
// (m = stored mantissa bits: 10, 7, 23, 52). Errors for integer dtypes.
Expected<std::vector<uint64_t>> extreme_pattern(ExtremeClass c, DType dtype);

// One tensor's override, as parsed from "fill". Two compact spellings of a value list:
//   {"runs": [[200.0, 515], [0.0, 515]]}   each value repeated count times, in order
//   {"sweep": {"from": -3.7, "to": -2.3}}  every value of the tensor's dtype in [from, to], ascending
//                                          (-0 before +0): an exhaustive sweep of an input range
// Both are then cycled like "values".
struct FillOverride {
  std::string tensor;
  bool is_extreme = false;
  ExtremeClass extreme = ExtremeClass::kSubnormal;
  std::vector<double> values;  // "values" exactly as written, or "runs" expanded
  bool is_sweep = false;
  double sweep_from = 0, sweep_to = 0;
};

// Every value of `dtype` in [from, to] ascending (-0 before +0), at most `limit` of them; an
// error names the count when there are more.
Expected<std::vector<double>> sweep_values(DType dtype, double from, double to, int64_t limit);

// Syntax of every "fill" in a case's "tensors" section; errors name "field 'tensors.<t>.fill...'".
Expected<std::vector<FillOverride>> parse_fill_overrides(const nlohmann::json& tensors);

// Writes the override into `t` (in place). Errors name the offending value or dtype.
Status apply_fill_override(const FillOverride& o, Tensor& t);

// The dtype checks against the call's descriptors (load time, so a run stops before it writes).
Status check_fill_overrides(const nlohmann::json& tensors, const SpecMap& specs);

// The case's inputs: the operator's fill, then the case's overrides. Every command that fills a
// case (run, repro, golden regen) goes through here, so their inputs agree bit for bit.
Expected<TensorMap> fill_case_inputs(const Problem& problem, const Case& c);

}  // namespace opgate
