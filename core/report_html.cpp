// The HTML report: counts, a case table sorted failures first, and per-output ULP histograms.
#include "core/report_html.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/markup.h"
#include "core/result_json.h"

namespace opgate {
namespace {

// The reports' one escape function, under the short name the markup below uses.
std::string esc(const std::string& s) { return xml_escape(s); }

const char* verdict_color(Verdict v) {
  switch (v) {
    case Verdict::kPassed: return "#2e7d32";
    case Verdict::kExpectedReject: return "#1565c0";
    case Verdict::kSkipped: return "#757575";
    case Verdict::kMistrusted: return "#ef6c00";
    default: return "#c62828";
  }
}

// Bars of the 8 ULP buckets on a log scale, so a single outlier next to millions of exact
// elements stays visible.
std::string ulp_svg(const std::array<int64_t, 8>& hist) {
  static const char* kLabels[] = {"0", "1", "2", "3-4", "5-8", "9-16", "17-64", ">64"};
  double max_log = 0;
  for (int64_t h : hist) max_log = std::max(max_log, std::log10(1.0 + static_cast<double>(h)));
  if (max_log == 0) return "";
  std::string svg = "<svg width=\"248\" height=\"64\" role=\"img\">";
  for (size_t i = 0; i < 8; ++i) {
    const double n = static_cast<double>(hist[i]);
    const double h = 44 * std::log10(1.0 + n) / max_log;
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{:.1f}\" width=\"26\" height=\"{:.1f}\" fill=\"{}\"><title>{} ulp: {}</title></rect>"
        "<text x=\"{}\" y=\"60\" font-size=\"8\" text-anchor=\"middle\">{}</text>",
        i * 31, 48 - h, h, i < 3 ? "#607d8b" : "#e57373", kLabels[i], n, i * 31 + 13, kLabels[i]);
  }
  return svg + "</svg>";
}

// Three significant digits; a non-finite value as results.jsonl writes it.
std::string metric(double v) { return std::isfinite(v) ? fmt::format("{:.3g}", v) : esc(number_text(v)); }

std::string count(int64_t n) { return fmt::format("{}", static_cast<double>(n)); }

// The determined elements and the error-balance counts: with the limit both differences must stay
// within when the gate judged the output (a finite limit above 0), else "not judged" (a limit of 0:
// no balance cluster; infinity, serialized as "inf": too few clusters for the bound to ever fail).
std::string determined_and_balance(const CompareMetrics& m) {
  std::string s = fmt::format("det {} of {}", count(m.determined), count(m.compared));
  const double limit = m.balance_limit;
  const bool judged = std::isfinite(limit) && limit > 0;
  const std::string counts = fmt::format("+{}/&minus;{}, away {}/toward {}", count(m.balance_pos),
                                         count(m.balance_neg), count(m.balance_away), count(m.balance_toward));
  if (judged) return s + fmt::format("; balance {}, limit {}", counts, metric(limit));
  if (limit != 0) {
    return s + fmt::format("; balance {}, not judged (too few clusters)", counts);
  }
  return s;
}

}  // namespace

std::string render_html_report(const nlohmann::json& run_info, const std::vector<CaseResult>& results,
                               const VerdictCounts& counts) {
  std::vector<const CaseResult*> order;
  for (const auto& r : results) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const CaseResult* a, const CaseResult* b) {
    return verdict_fails(a->verdict, true) > verdict_fails(b->verdict, true);
  });
  std::string html =
      "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>opgate report</title><style>"
      "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
      "td,th{border:1px solid #ddd;padding:3px 6px;font-size:13px;vertical-align:top}"
      ".v{color:#fff;font-weight:bold;padding:1px 5px;border-radius:3px}code{font-size:12px}"
      "</style></head><body><h1>opgate report</h1>";
  html += fmt::format("<p><code>{}</code></p><p>", esc(run_info.dump()));
  for (size_t i = 0; i < kVerdictCount; ++i) {
    if (counts[i] == 0) continue;
    const auto v = static_cast<Verdict>(i);
    html += fmt::format("<span class=\"v\" style=\"background:{}\">{} {}</span> ", verdict_color(v), verdict_name(v),
                        counts[i]);
  }
  html += "</p><table><tr><th>case</th><th>verdict</th><th>reason</th><th>outputs: check, max abs, "
          "max rel, MERE, RMSE, cosine, error balance; determined elements and error-balance counts; ULP "
          "histogram</th><th>ms</th></tr>";
  for (const CaseResult* r : order) {
    html += fmt::format("<tr><td><code>{}</code><br><small>{} / {}</small></td>", esc(r->id), esc(r->op), esc(r->tier));
    html += fmt::format("<td><span class=\"v\" style=\"background:{}\">{}</span></td>", verdict_color(r->verdict),
                        verdict_name(r->verdict));
    html += fmt::format("<td>{}", esc(r->reason));
    if (verdict_fails(r->verdict, true)) html += fmt::format("<br><code>{}</code>", esc(r->repro));
    html += "</td><td>";
    for (const auto& o : r->outputs) {
      const CompareResult& c = o.compare;
      const CompareMetrics& m = c.metrics;
      html += fmt::format("<div><b>{}</b> {} {}: abs {} rel {} mere {} rmse {} cos {} eb {}<br><small>{}</small><br>{}</div>",
                          esc(c.name), esc(c.standard), c.passed ? "ok" : "<b style=\"color:#c62828\">FAIL</b>",
                          metric(m.max_abs), metric(m.max_rel), metric(m.mere), metric(m.rmse), metric(m.cosine),
                          metric(m.error_balance), determined_and_balance(m), ulp_svg(m.ulp_hist));
    }
    html += fmt::format("</td><td>{:.1f}</td></tr>", r->total_ms);
  }
  return html + "</table></body></html>\n";
}

}  // namespace opgate
