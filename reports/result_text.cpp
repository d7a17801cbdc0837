#include "reports/result_text.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/result_json.h"

namespace opgate {

std::string describe_result(const CaseResult& r, int max_points) {
  std::string out;
  for (const auto& o : r.outputs) {
    const CompareResult& c = o.compare;
    if (c.passed) continue;
    out += fmt::format("  output {} ({}): {}\n", c.name, c.standard, c.message);
    for (const StandardResult& st : c.standards) {
      out += fmt::format("    {:<21} {}: {}\n", st.name,
                         !st.verdict.applies ? "n/a" : (st.verdict.passed ? "pass" : "FAIL"), st.verdict.detail);
    }
    int n = 0;
    for (const ComparePoint& p : c.worst) {
      if (n++ >= max_points) break;
      out += fmt::format("    {:<28} {:<40} expected {} (as dtype {}) got {} diff {} allowed {}{}\n",
                         nlohmann::json(p.index).dump(), p.where, number_text(p.expected),
                         number_text(p.expected_rounded), number_text(p.got), number_text(p.abs_err),
                         number_text(p.allowed), p.poison ? " [poison]" : "");
    }
  }
  return out;
}

}  // namespace opgate
