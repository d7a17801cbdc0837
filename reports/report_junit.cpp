#include "reports/report_junit.h"

#include <map>

#include <fmt/format.h>

#include "core/markup.h"
#include "reports/report_standards.h"
#include "reports/result_text.h"

namespace opgate {
namespace {

bool is_infrastructure(Verdict v) {
  return v == Verdict::kBackendError || v == Verdict::kInvalidCase || v == Verdict::kTimeout ||
         v == Verdict::kCrashed;
}

struct SuiteCounts {
  size_t tests = 0, failures = 0, errors = 0, skipped = 0;
  double seconds = 0;
};

SuiteCounts count(const std::vector<const CaseResult*>& rs, bool strict) {
  SuiteCounts c;
  for (const CaseResult* r : rs) {
    ++c.tests;
    c.seconds += r->total_ms / 1000;
    if (is_infrastructure(r->verdict)) {
      ++c.errors;
    } else if (verdict_fails(r->verdict, strict)) {
      ++c.failures;
    } else if (r->verdict == Verdict::kSkipped) {
      ++c.skipped;
    }
  }
  return c;
}

// A run.json value as a plain property value: text as is, numbers and booleans as written, a list
// of plain values joined by commas (tiers "ci,smoke"); objects are flattened by the caller.
std::string plain_value(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  if (!v.is_array()) return v.dump();
  std::string out;
  for (const auto& item : v) out += (out.empty() ? "" : ",") + plain_value(item);
  return out;
}

// One <property> per leaf of the run settings, objects flattened into dotted names
// ("backend.backend" = "fault:mfrg.k_major_index"), so CI pages show values, not JSON.
void add_properties(const std::string& prefix, const nlohmann::json& object, std::string& out) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    const std::string name = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it.value().is_object()) {
      add_properties(name, it.value(), out);
      continue;
    }
    out += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", xml_escape(name),
                       xml_escape(plain_value(it.value())));
  }
}

// The run settings, then each output of the suite's operator under its gate and Ascend's standards
// ("standards.attentionOut.ascend-v0.3" = "43 passed, 18 n/a"; reports/report_standards.h).
std::string properties(const nlohmann::json& run_info, const std::vector<const CaseResult*>& rs) {
  std::string out;
  if (run_info.is_object()) add_properties("", run_info, out);
  for (const auto& [key, s] : tally_standards(rs)) {
    const std::string& output = key.second;  // a lambda may not capture a structured binding in C++17
    auto add = [&out, &output](const std::string& name, const StandardTally& t) {
      out += fmt::format("      <property name=\"standards.{}.{}\" value=\"{}\"/>\n", xml_escape(output),
                         xml_escape(name), xml_escape(tally_text(t)));
    };
    add("gate", s.gated);
    for (const auto& [name, t] : s.standards) add(name, t);
    if (s.has_bits) {
      out += fmt::format("      <property name=\"standards.{}.effective_bits\" value=\"{:.1f}\"/>\n",
                         xml_escape(key.second), s.fewest_bits);
    }
  }
  return out.empty() ? "" : "    <properties>\n" + out + "    </properties>\n";
}

// "opgate.<stem>.<tier>": Jenkins reads the part before the last dot as the package, so cases
// group by operator and then by tier. A case without a tier (given as text) is "opgate.<stem>".
std::string classname(const CaseResult& r) {
  return r.tier.empty() ? "opgate." + r.op : fmt::format("opgate.{}.{}", r.op, r.tier);
}

// What a CI page shows under a red case: the reason, the worst elements, the repro command.
std::string body(const CaseResult& r) {
  return xml_escape(fmt::format("{}\n{}repro: {}", r.reason, describe_result(r), r.repro));
}

std::string testcase(const CaseResult& r, bool strict) {
  std::string xml = fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\">", xml_escape(classname(r)),
                                xml_escape(r.id), r.total_ms / 1000);
  const std::string attrs =
      fmt::format("type=\"{}\" message=\"{}\"", verdict_name(r.verdict), xml_escape(r.reason));
  if (is_infrastructure(r.verdict)) {
    xml += fmt::format("<error {}>{}</error>", attrs, body(r));
  } else if (verdict_fails(r.verdict, strict)) {
    xml += fmt::format("<failure {}>{}</failure>", attrs, body(r));
  } else if (r.verdict == Verdict::kSkipped) {
    xml += fmt::format("<skipped message=\"{}\"/>", xml_escape(r.reason));
  } else if (r.verdict != Verdict::kPassed) {
    xml += fmt::format("<system-out>{}: {}</system-out>", verdict_name(r.verdict), xml_escape(r.reason));
  }
  return xml + "</testcase>\n";
}

}  // namespace

std::string render_junit(const nlohmann::json& run_info, const std::vector<CaseResult>& results,
                         const std::string& timestamp, const std::string& hostname) {
  const bool strict = run_info.is_object() && run_info.value("strict", false);
  std::map<std::string, std::vector<const CaseResult*>> by_op;
  for (const CaseResult& r : results) by_op[r.op].push_back(&r);
  std::vector<const CaseResult*> all;
  for (const CaseResult& r : results) all.push_back(&r);
  const SuiteCounts total = count(all, strict);
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format("<testsuites name=\"opgate\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.3f}\">\n",
                     total.tests, total.failures, total.errors, total.seconds);
  int id = 0;
  for (const auto& [op, rs] : by_op) {
    const SuiteCounts c = count(rs, strict);
    xml += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3f}\" "
        "timestamp=\"{}\" hostname=\"{}\" id=\"{}\" package=\"opgate\">\n",
        xml_escape(op), c.tests, c.failures, c.errors, c.skipped, c.seconds, xml_escape(timestamp),
        xml_escape(hostname), id++);
    xml += properties(run_info, rs);
    for (const CaseResult* r : rs) xml += testcase(*r, strict);
    xml += "  </testsuite>\n";
  }
  return xml + "</testsuites>\n";
}

}  // namespace opgate
