#include "reports/result_text.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/units.h"

namespace opgate {

std::string point_text(DType t, const ComparePoint& p) {
  return fmt::format("expected {} got {} ({}) diff {} allowed {}; reference {}{}", value_text(t, p.expected_rounded),
                     value_text(t, p.got), ulp_text(t, ulp_distance(t, p.expected_rounded, p.got)),
                     short_text(p.abs_err), short_text(p.allowed), reference_text(t, p.expected),
                     p.poison ? " [poison]" : "");
}

std::string describe_result(const CaseResult& r, int max_points, bool standards) {
  std::string out;
  for (const auto& o : r.outputs) {
    const CompareResult& c = o.compare;
    if (c.passed) continue;
    out += fmt::format("  output {} ({}, {}): {}\n", c.name, c.standard, dtype_name(o.plan.device_dtype), c.message);
    if (standards) {
      for (const StandardResult& st : c.standards) {
        out += fmt::format("    {:<21} {}: {}\n", st.name,
                           !st.verdict.applies ? "n/a" : (st.verdict.passed ? "pass" : "FAIL"), st.verdict.detail);
      }
    }
    int n = 0;
    for (const ComparePoint& p : c.worst) {
      if (n++ >= max_points) break;
      out += fmt::format("    {:<12} {:<40} {}\n", nlohmann::json(p.index).dump(), p.where,
                         point_text(o.plan.device_dtype, p));
    }
  }
  return out;
}

}  // namespace opgate
