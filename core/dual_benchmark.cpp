#include "core/dual_benchmark.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace opgate {

double error_balance_against(const Tensor& got, const Tensor& twin, const Tensor& care) {
  double sum = 0;
  int64_t n = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    if (care.defined() && care.get(i) == 0) continue;
    const double a = got.get(i), t = twin.get(i);
    if (!std::isfinite(a) || !std::isfinite(t)) continue;
    sum += (a - t) / std::max(std::fabs(t), 1.0);
    ++n;
  }
  return n > 0 ? sum / static_cast<double>(n) : 0.0;
}

StandardVerdict dual_benchmark_output(const OutputCheck& check, const CompareResult& device, const Tensor& expected,
                                      const Tensor& got, const Tensor& twin, const Tensor& magnitude,
                                      const Tensor& care) {
  StandardVerdict v;
  if (check.kind != CheckKind::kTolerance || !is_floating(check.device_dtype)) {
    v.applies = false;
    v.detail = "not applicable: judged exactly or in steps, not by error ratios";
    return v;
  }
  if (!check.standards_na.empty()) {
    v.applies = false;
    v.detail = "not applicable: " + check.standards_na;
    return v;
  }
  if (twin.shape() != got.shape() || twin.dtype() != got.dtype()) {
    v.applies = false;
    v.detail = "not applicable: the twin's output has another shape or dtype";
    return v;
  }
  // The twin's figures from the same comparator pass (its verdict does not matter here).
  const CompareMetrics t = compare_output(check, expected, twin, magnitude, care).metrics;
  const CompareMetrics& d = device.metrics;
  v = judge_dual_benchmark({d.mare, d.mere, d.rmse}, {t.mare, t.mere, t.rmse}, error_balance_against(got, twin, care),
                           dual_benchmark_limits(check.op_class, check.device_dtype));
  if (d.nonfinite_mismatch > 0 || d.poison_left > 0) {
    v.passed = false;
    v.detail += "; non-finite or unwritten elements";
  }
  return v;
}

}  // namespace opgate
