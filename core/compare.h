// The comparator: per-output checks (exact, tolerance, quantized, undefined regions), the named
// tolerance standards of DESIGN.md §6, the metrics every report records, and the vacuity check.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ascend_standard.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace opgate {

enum class CheckKind {
  kExact,      // bits of got == bits of expected rounded to the device dtype (NaN matches NaN)
  kTolerance,  // floating: the standard in `Tolerance` decides
  kQuantized,  // integer-quantised: |got - round(expected)| <= max_steps
  kUndefined,  // not compared at all (the API leaves the whole output unspecified)
};

enum class Standard {
  // |got - exp| <= c * u_acc * magnitude_i + out_ulps * ulp_T(exp_i). With out_ulps = 0.5 (one final
  // rounding with the check's mode) got must moreover be what some value within acc = c * u_acc *
  // magnitude_i of exp rounds to: one device value where [exp - acc, exp + acc] rounds to a single
  // one (a determined element), else a value between the rounded ends. Errors beyond that final
  // rounding must also be balanced (core/error_balance.h). Only `bound` models the kernel's
  // rounding this way: the named external standards below keep their published definitions, and
  // `quantized` is defined in steps from the rounded expectation.
  kBound,
  kAscendMixed,     // opbase mixed: |a-g| <= atol + rtol|g| on >= 99 %, max abs <= max(floor, 32 ulp)
  kMereMare,        // ecosystem: MERE < T and MARE < 10 T
  kDualThousandth,  // torch_npu style: abs or rel error <= rtol on >= 99.9 % of elements
  kAllclose,        // |a-g| <= atol + rtol|g| on all but max_bad_fraction of the elements
  // Ascend's standards (core/ascend_standard.h) as the gate (run --standard): every element within
  // 2^ERR_BASE max(|g|, 1) and |EB| within 2^EB_BASE (an integer output: within 1 step of the
  // rounded golden); at most `share` of the elements beyond rate max(|g|, 1), each below the cap.
  kAscendV03,
  kAscendDualPermille,
};

const char* check_kind_name(CheckKind k);
const char* standard_name(Standard s);
std::optional<Standard> parse_standard(const std::string& name);

struct Tolerance {
  Standard standard = Standard::kBound;
  // kBound: the accumulation constant c (e.g. number of terms in the worst rounding chain), the unit
  // roundoff of the accumulation dtype, and the final rounding to the output dtype in its ulps.
  double c = 1.0;
  double u_acc = 0x1p-24;
  double out_ulps = 0.5;
  // kAllclose (kAscendMixed, kMereMare and kDualThousandth take theirs from the dtype).
  double rtol = 0.0;
  double atol = 0.0;
  double max_bad_fraction = 0.0;
};

struct OutputCheck {
  std::string name;        // aclnn output name
  CheckKind kind = CheckKind::kExact;
  DType device_dtype = DType::kF32;
  Rounding rounding = Rounding::kNearestEven;  // how the kernel rounds its result to the dtype
  Tolerance tol;
  int64_t max_steps = 1;   // kQuantized
  // kBound with one final rounding: the error-balance gate's independent unit, as a number of
  // consecutive elements in the output's canonical layout whose errors may be correlated (e.g. the
  // D outputs of one attention head); 0 = rows and columns (core/error_balance.h).
  int64_t balance_cluster = 0;
  // kBound with one final rounding: a dtype the kernel rounds its result to first, in the same mode,
  // before the final rounding (an int8 output quantised through half). A value that lands on a tie
  // of the final rounding there is a tie for the error-balance gate too: with round-half-away both
  // times, every such element goes away from zero on a correct kernel.
  std::optional<DType> ties_via;
  // Ascend's accuracy standards (core/ascend_standard.h), reported beside the gating check: the
  // output's operator class and the terms the reference sums into one element (0: none known).
  OpClass op_class = OpClass::kComputeFloat;
  int64_t accumulations = 0;
  // Why Ascend's standards do not apply to this output (empty: they do), e.g. a fill they are not
  // calibrated on (scope_ascend_standards) or a re-quantisation inside the kernel.
  std::string standards_na;
  std::string reason;      // why this check and these numbers; printed in verbose reports
};

struct ComparePlan {
  std::vector<OutputCheck> outputs;
};

// Ascend's standards are calibrated on random data like ATB's tests draw: on other fills (exact
// grids, adversarial values) every output they would judge is marked as outside their scope.
void scope_ascend_standards(ComparePlan& plan, bool realistic_fill);
// run --standard: `s` gates every floating-tolerance output in Ascend's scope instead of its own
// standard (exact outputs stay exact; outputs out of scope keep theirs and say so in their reason).
void gate_with_standard(ComparePlan& plan, Standard s);

// One element of an output, as reported.
struct ComparePoint {
  int64_t flat = 0;
  std::vector<int64_t> index;
  double expected = 0;          // raw reference value
  double expected_rounded = 0;  // rounded to the device dtype
  double got = 0;
  double abs_err = 0;
  double rel_err = 0;
  double allowed = 0;           // the element's tolerance (0 for exact)
  // kBound with one final rounding: got must lie in [accepted_lo, accepted_hi] (equal: determined).
  bool interval = false;
  double accepted_lo = 0, accepted_hi = 0;
  bool poison = false;          // got still holds the poison pattern
  std::string where;            // domain terms, filled by the caller (e.g. "row 3 (r 1, k 1), col 7")
};

struct CompareMetrics {
  int64_t elements = 0;     // numel
  int64_t compared = 0;     // cared elements
  int64_t mismatches = 0;   // elements failing their elementwise criterion
  int64_t poison_left = 0;  // cared elements still holding poison
  int64_t nonfinite_mismatch = 0;
  // Compared elements whose check accepts a single device value: every element of an exact output,
  // and the elements of a one-rounding bound whose interval rounds to one value.
  int64_t determined = 0;
  // Elements the reference left out of `compared` because the kernel's own precision can overflow
  // on the way to them (RefOutputs::beyond_range); not counted in `elements - compared` by the API.
  int64_t beyond_range = 0;
  double max_abs = 0, max_rel = 0;
  double mere = 0, mare = 0;  // mean / max of |a-g| / (|g| + 1e-7)
  double rmse = 0;
  // -log2(sqrt(sum (a - g)^2 / sum g^2)) over the finite compared elements, in [0, 53]: the bits of
  // the reference the output kept (fp16 rounding alone keeps about 12, bf16 about 9, fp32 about 25).
  double effective_bits = 53;
  double error_balance = 0;   // (#(got > exp) - #(got < exp)) / compared
  // The gate on it (kBound with one final rounding; core/error_balance.h): elements above / below
  // the correctly rounded reference and moved away from / toward zero, ties excluded, and the
  // largest |pos - neg| or |away - toward| a correct kernel reaches with probability 1 - 1e-9 (+inf
  // when this output is too small to tell).
  int64_t balance_pos = 0, balance_neg = 0;
  int64_t balance_away = 0, balance_toward = 0;
  double balance_limit = 0;
  double cosine = 1;
  // ULP histogram in device-dtype ulps at the expected value: 0, 1, 2, 3-4, 5-8, 9-16, 17-64, >64.
  std::array<int64_t, 8> ulp_hist{};
  double max_ulp = 0;
  // Largest |error| / allowance over finite elements with a nonzero allowance: how much of the
  // tolerance the worst element uses (1 = at the limit). Baselines track it to see drift early.
  double budget_used = 0;
  // Where along the output's first dimension the error is (the error picture of report.html):
  // for each slice of dim 0 (one index per slice, or consecutive indices sharing one of at most
  // kAxisSlices), the largest |error| / allowance of its compared elements; a failing element with
  // no allowance (exact checks, non-finite mismatches) counts kAxisFailing. Empty for rank < 2.
  static constexpr int64_t kAxisSlices = 64;
  static constexpr double kAxisFailing = 1e6;
  int64_t axis_rows = 0;  // dim 0
  std::vector<double> axis_budget;
  // The statistics of Ascend's standards over the finite compared elements (not of exact outputs).
  AscendStats ascend;
};

// What vacuity_check needs from the data, gathered by compare_output in its one pass so that the
// vacuity check walks the output no second time. Not reported.
struct VacuityInputs {
  bool ready = false;  // gathered (compare_output compared the output)
  // Cared elements with the largest |expected| (an expected NaN or Inf ranks as -1, below every
  // finite one; ties by lower index), at least allowed_bad + 1 of them when there are that many;
  // unordered.
  std::vector<std::pair<double, int64_t>> largest;
  // Exact outputs of rank >= 2 with two rows or more: the first row whose elements are all cared
  // (-1: none), and the first later row with a cared element whose expected value differs from
  // row0's in the same column (-1: none).
  int64_t row0 = -1;
  int64_t row_differs = -1;
};

// One output under one of Ascend's standards, beside the gating verdict.
struct StandardResult {
  std::string name;  // "ascend-v0.3", "ascend-dual-permille", "dual-benchmark"
  StandardVerdict verdict;
};

struct CompareResult {
  std::string name;
  CheckKind kind = CheckKind::kExact;
  std::string standard;  // "exact", "bound", ... for the report
  bool passed = true;
  std::string message;   // one line: why it failed, or the headline metrics
  CompareMetrics metrics;
  std::vector<ComparePoint> first_failures;  // first in index order (at most 10)
  std::vector<ComparePoint> worst;           // largest errors relative to allowance (at most 10)
  std::vector<StandardResult> standards;     // Ascend's standards, in a fixed order
  // What the first dimension (the error picture's axis, metrics.axis_budget) is in the operator's
  // terms ("batch", "expert", "token row r"), from Problem::describe of an empty index; filled by
  // the caller for a failing output with an error picture.
  std::string axis_name;
  VacuityInputs vacuity;
};

// Compares `got` (device dtype) with `expected` (f64, or integer in the device dtype).
// `magnitude` (f64) and `care` (u8) may be undefined tensors. `poison_bits` is the pattern the
// output buffer was pre-filled with (reported as "left unwritten"). The pass runs over fixed blocks
// of elements on math::parallel_for, each block's metrics merged in block order, so the result is
// the same at every thread count.
CompareResult compare_output(const OutputCheck& check, const Tensor& expected, const Tensor& got,
                             const Tensor& magnitude, const Tensor& care,
                             std::optional<uint64_t> poison_bits = std::nullopt);

// One element's allowance under `check`: the largest |got - expected| it accepts, given the raw
// expected value and the element's magnitude (0 for exact, inf for undefined); ComparePoint::allowed.
double allowance_at(const OutputCheck& check, double expected, double magnitude);

// The vacuity check: perturbs a copy of `got` as little as the check should notice (the fewest
// elements the standard rejects, each moved just beyond its own tolerance; for exact outputs also
// two distinct rows swapped) and returns why the case is vacuous if the perturbed copy still
// passes; an empty output is never vacuous (it has no element to move). `got` must itself pass. With `original` (the CompareResult of `got`), standards decided
// elementwise judge only the changed elements instead of comparing the whole output again, and the
// elements to perturb come from original->vacuity instead of a walk over the output.
std::optional<std::string> vacuity_check(const OutputCheck& check, const Tensor& expected,
                                         const Tensor& got, const Tensor& magnitude,
                                         const Tensor& care, const CompareResult* original = nullptr);

}  // namespace opgate
