// CaseResult -> HistoryCase. The only code of history/ that reads CaseResult::outputs, so a change
// of its representation is ported here and nowhere else.
#include "history/history_from_result.h"

#include <cmath>
#include <limits>

namespace opgate::history {
namespace {

// results.jsonl writes non-finite numbers as "inf", "-inf" and "nan" (JSON has none).
bool metric_value(const nlohmann::json& v, double* out) {
  if (v.is_number()) {
    *out = v.get<double>();
    return true;
  }
  if (!v.is_string()) return false;  // e.g. ulp_hist, an array
  const std::string s = v.get<std::string>();
  if (s == "inf") *out = std::numeric_limits<double>::infinity();
  else if (s == "-inf") *out = -std::numeric_limits<double>::infinity();
  else if (s == "nan") *out = std::numeric_limits<double>::quiet_NaN();
  else return false;
  return true;
}

}  // namespace

HistoryCase history_case_from_result(const CaseResult& r) {
  HistoryCase c;
  c.id = r.id;
  c.op = r.op;
  c.tier = r.tier;
  c.verdict = verdict_name(r.verdict);
  c.reason = r.reason;
  c.duration_ms = r.total_ms;
  for (const auto& o : r.outputs) {
    HistoryOutput out;
    out.name = o.compare.name;
    out.check = o.compare.standard;
    out.passed = o.compare.passed;
    out.budget_used = std::numeric_limits<double>::quiet_NaN();
    // The scalar metrics under their results.jsonl names, through the one serializer.
    const nlohmann::json metrics = to_json(o.compare.metrics);
    for (const auto& [key, value] : metrics.items()) {
      double v = 0;
      if (metric_value(value, &v)) out.metrics[key] = v;
    }
    // Ascend's standards as 1 (passed) or 0 (failed) metrics; absent where a standard does not apply.
    for (const StandardResult& st : o.compare.standards) {
      if (st.verdict.applies) out.metrics["passes." + st.name] = st.verdict.passed ? 1 : 0;
    }
    if (const auto it = out.metrics.find("budget_used"); it != out.metrics.end()) {
      out.budget_used = it->second;
      out.metrics.erase(it);  // a column of its own
    }
    c.outputs.push_back(std::move(out));
  }
  return c;
}

}  // namespace opgate::history
