#include "reports/report_standards.h"

#include <algorithm>

#include <fmt/format.h>

namespace opgate {
namespace {

void count(StandardTally& t, bool applies, bool passed) {
  if (!applies) ++t.not_applicable;
  else if (passed) ++t.passed;
  else ++t.failed;
}

}  // namespace

std::map<std::pair<std::string, std::string>, OutputStandards> tally_standards(const std::vector<CaseResult>& results) {
  std::vector<const CaseResult*> all;
  all.reserve(results.size());
  for (const CaseResult& r : results) all.push_back(&r);
  return tally_standards(all);
}

std::map<std::pair<std::string, std::string>, OutputStandards> tally_standards(
    const std::vector<const CaseResult*>& results) {
  std::map<std::pair<std::string, std::string>, OutputStandards> out;
  for (const CaseResult* rp : results) {
    const CaseResult& r = *rp;
    for (const OutputResult& o : r.outputs) {
      const CompareResult& c = o.compare;
      if (c.kind == CheckKind::kUndefined) continue;
      OutputStandards& s = out[{r.op, c.name}];
      if (s.gate.find(c.standard) == std::string::npos) s.gate += (s.gate.empty() ? "" : "/") + c.standard;
      count(s.gated, true, c.passed);
      for (const StandardResult& st : c.standards) count(s.standards[st.name], st.verdict.applies, st.verdict.passed);
      // Bits of a mantissa: integer outputs (quantised) have none to keep.
      if (c.kind == CheckKind::kTolerance && c.metrics.compared > 0 && is_floating(o.plan.device_dtype)) {
        s.fewest_bits = std::min(s.fewest_bits, c.metrics.effective_bits);
        s.has_bits = true;
      }
    }
  }
  return out;
}

std::string tally_text(const StandardTally& t) {
  std::string s;
  auto part = [&](int n, const char* what) {
    if (n > 0) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", n, what);
  };
  part(t.passed, "passed");
  part(t.failed, "failed");
  part(t.not_applicable, "n/a");
  return s.empty() ? "-" : s;
}

std::string standards_summary(const std::vector<CaseResult>& results) {
  const auto tallies = tally_standards(results);
  if (tallies.empty()) return "";
  std::string out = "standards per output (cases; reports/README.md defines them):\n";
  for (const auto& [key, s] : tallies) {
    out += fmt::format("  {} {}: gate {} {}", key.first, key.second, s.gate, tally_text(s.gated));
    for (const auto& [name, t] : s.standards) out += fmt::format("; {} {}", name, tally_text(t));
    if (s.has_bits) out += fmt::format("; effective bits >= {:.1f}", s.fewest_bits);
    out += "\n";
  }
  return out;
}

}  // namespace opgate
