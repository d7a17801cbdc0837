// The HTML report, in the order a CI owner reads it: counts, where the time went, run settings, the
// per-operator summary, the failures with their worst elements, then every case in a filterable,
// sortable table with its per-output metrics and ULP histograms. One file: inline CSS, inline JS,
// inline SVG.
#include "reports/report_html.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/markup.h"
#include "reports/report_banner.h"
#include "reports/report_standards.h"
#include "reports/report_trends.h"
#include "reports/units.h"
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

std::string badge(Verdict v) {
  return fmt::format("<span class=\"v\" style=\"background:{}\">{}</span>", verdict_color(v), verdict_name(v));
}

// The cases that got a failed/<id>.json (core/report.cpp writes one for verdict_fails(v, true)).
bool is_failure(Verdict v) { return verdict_fails(v, true); }

// A relative link to failed/<id>.json: the id percent-encoded as a path segment, then escaped.
std::string failed_href(const std::string& id) {
  std::string path = "failed/";
  for (unsigned char ch : id) {
    if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      path += static_cast<char>(ch);
    } else {
      path += fmt::format("%{:02X}", ch);
    }
  }
  return esc(path + ".json");
}

// Bars of the 8 ULP buckets on a log scale, so a single outlier next to millions of exact
// elements stays visible.
std::string ulp_svg(const std::array<int64_t, 8>& hist) {
  static const char* kLabels[] = {"0", "1", "2", "3-4", "5-8", "9-16", "17-64", ">64"};
  double max_log = 0;
  for (int64_t h : hist) max_log = std::max(max_log, std::log10(1.0 + static_cast<double>(h)));
  if (max_log == 0) return "";
  std::string svg = "<svg width=\"248\" height=\"74\" role=\"img\">";
  for (size_t i = 0; i < 8; ++i) {
    const double n = static_cast<double>(hist[i]);
    const double h = 44 * std::log10(1.0 + n) / max_log;
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{:.1f}\" width=\"26\" height=\"{:.1f}\" fill=\"{}\"><title>{} ulp: {}</title></rect>"
        "<text x=\"{}\" y=\"60\" font-size=\"8\" text-anchor=\"middle\">{}</text>",
        i * 31, 48 - h, h, i < 3 ? "#607d8b" : "#e57373", esc(kLabels[i]), n, i * 31 + 13, esc(kLabels[i]));
  }
  // The legend: what the axes are.
  return svg + "<text x=\"0\" y=\"72\" font-size=\"8\" fill=\"#555\">elements per ulp distance (bar height: log "
               "count)</text></svg>";
}

// Three significant digits; a non-finite value as results.jsonl writes it.
std::string metric(double v) { return std::isfinite(v) ? fmt::format("{:.3g}", v) : esc(number_text(v)); }

// A sort key for data-key attributes: numbers JS's Number() reads, infinities included.
std::string sort_key(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return fmt::format("{}", v);
}

// budget_used bounded and readable (reports/units.h), the raw value in the tooltip.
std::string budget_cell(double b, const std::string& extra = "") {
  return fmt::format("<td class=\"budget\" data-key=\"{}\" title=\"budget_used {}\">{}{}</td>", sort_key(b),
                     esc(number_text(b)), esc(budget_text(b)), extra);
}

std::string count(int64_t n) { return fmt::format("{}", static_cast<double>(n)); }

// The largest budget_used over a case's outputs (0 when nothing was compared).
double case_budget(const CaseResult& r) {
  double worst = 0;
  for (const auto& o : r.outputs) worst = std::max(worst, o.compare.metrics.budget_used);
  return worst;
}

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

// Run settings as key / value rows: nested objects as dotted keys, arrays of scalars joined.
void settings_rows(const nlohmann::json& j, const std::string& key, std::string& rows) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) settings_rows(v, key.empty() ? k : key + "." + k, rows);
    return;
  }
  std::string value;
  if (j.is_string()) {
    value = j.get<std::string>();
  } else if (j.is_array()) {
    for (const auto& e : j) value += (value.empty() ? "" : ", ") + (e.is_string() ? e.get<std::string>() : e.dump());
  } else if (!j.is_object()) {
    value = j.dump();
  }
  rows += fmt::format("<tr><th>{}</th><td>{}</td></tr>", esc(key), value.empty() ? "&mdash;" : esc(value));
}

// Where the run's time went: summary.txt's line, each stage's total largest first (issue 15 part 4).
std::string stage_times(const std::vector<CaseResult>& results) {
  std::string line = stage_time_line(results);
  if (line.empty()) return "";
  line.pop_back();  // the newline
  return fmt::format("<p id=\"stage-times\"><small>{}</small></p>", esc(line));
}

std::string settings_table(const nlohmann::json& run_info) {
  std::string rows;
  if (run_info.is_object()) settings_rows(run_info, "", rows);
  if (rows.empty()) return "";
  return "<h2>Run settings</h2><table id=\"settings\">" + rows + "</table>";
}

std::string verdict_counts(const VerdictCounts& counts) {
  std::string html = "<p id=\"counts\">";
  for (size_t i = 0; i < kVerdictCount; ++i) {
    if (counts[i] == 0) continue;
    const auto v = static_cast<Verdict>(i);
    html += fmt::format("<span class=\"v\" style=\"background:{}\" data-verdict=\"{}\">{} {}</span> ",
                        verdict_color(v), verdict_name(v), verdict_name(v), counts[i]);
  }
  return html + "</p>";
}

// One row per operator: its case count, the count per verdict that occurs in the run, and its worst
// budget_used with the case that used it.
std::string operator_summary(const std::vector<CaseResult>& results) {
  struct OpRow {
    VerdictCounts counts{};
    int64_t cases = 0;
    double budget = -1;
    std::string budget_case;
  };
  std::map<std::string, OpRow> ops;
  VerdictCounts present{};
  for (const auto& r : results) {
    OpRow& row = ops[r.op];
    ++row.cases;
    ++row.counts[static_cast<size_t>(r.verdict)];
    ++present[static_cast<size_t>(r.verdict)];
    const double b = case_budget(r);
    if (!r.outputs.empty() && (row.budget < 0 || b > row.budget)) {
      row.budget = b;
      row.budget_case = r.id;
    }
  }
  std::string html = "<h2>Operators</h2><table id=\"ops\"><tr><th>operator</th><th>cases</th>";
  for (size_t i = 0; i < kVerdictCount; ++i) {
    if (present[i] > 0) html += fmt::format("<th>{}</th>", verdict_name(static_cast<Verdict>(i)));
  }
  html += "<th>worst budget used</th></tr>";
  for (const auto& [op, row] : ops) {
    html += fmt::format("<tr class=\"op\" data-op=\"{}\"><td><code>{}</code></td><td class=\"n\">{}</td>", esc(op),
                        esc(op), row.cases);
    for (size_t i = 0; i < kVerdictCount; ++i) {
      if (present[i] == 0) continue;
      html += fmt::format("<td class=\"n\" data-verdict=\"{}\">{}</td>", verdict_name(static_cast<Verdict>(i)),
                          row.counts[i]);
    }
    html += row.budget < 0 ? std::string("<td class=\"budget\">&mdash;</td>")
                           : budget_cell(row.budget, fmt::format(" <small>{}</small>", esc(row.budget_case)));
    html += "</tr>";
  }
  return html + "</table>";
}

// Each output under its gate and under Ascend's standards (reports/report_standards.h), one row each.
std::string standards_section(const std::vector<CaseResult>& results) {
  const auto tallies = tally_standards(results);
  if (tallies.empty()) return "";
  std::vector<std::string> names;
  for (const auto& [key, s] : tallies) {
    for (const auto& [name, t] : s.standards) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  std::string html = "<h2>Standards</h2><p class=\"note\">cases per output: the gating check, then Ascend's "
                     "standards (defined in reports/README.md); effective bits = -log2 of the relative RMS error "
                     "against the fp64 reference, the fewest over the cases</p><table id=\"standards\"><tr>"
                     "<th>operator</th><th>output</th><th>gate</th>";
  for (const std::string& n : names) html += fmt::format("<th>{}</th>", esc(n));
  html += "<th>effective bits</th></tr>";
  auto cell = [](const StandardTally& t, const std::string& title = "") {
    const char* cls = t.failed > 0 ? "bad" : (t.passed > 0 ? "ok" : "na");
    return fmt::format("<td class=\"std {}\"{}>{}</td>", cls,
                       title.empty() ? "" : fmt::format(" title=\"{}\"", esc(title)), esc(tally_text(t)));
  };
  for (const auto& [key, s] : tallies) {
    html += fmt::format("<tr><td><code>{}</code></td><td><code>{}</code></td>", esc(key.first), esc(key.second));
    html += cell(s.gated, s.gate);
    for (const std::string& n : names) {
      const auto it = s.standards.find(n);
      html += it == s.standards.end() ? std::string("<td class=\"std na\">-</td>") : cell(it->second);
    }
    html += s.has_bits ? fmt::format("<td class=\"n\">{:.1f}</td>", s.fewest_bits) : std::string("<td>-</td>");
    html += "</tr>";
  }
  return html + "</table>";
}

// As many worst elements per output as the terminal prints (describe_result's default); the case
// file has all of them.
constexpr size_t kWorstShown = 5;

// The worst elements of one failed output, in domain terms (ComparePoint::where, filled by the
// operator's layer), as the terminal's describe_result prints them: values in the digits of the
// output's dtype `t`, their distance in its ulps, the fp64 reference last.
std::string worst_table(const CompareResult& c, DType t) {
  std::string html = fmt::format("<p><b>{}</b> ({}, {}): {}</p>", esc(c.name), esc(c.standard), dtype_name(t),
                                 esc(c.message));
  if (c.worst.empty()) return html;
  html += fmt::format("<table class=\"worst\"><tr><th>index</th><th>where</th><th>expected ({})</th><th>got</th>"
                      "<th>{}</th><th>abs err</th><th>allowed</th><th>reference (fp64)</th></tr>",
                      dtype_name(t), is_floating(t) ? "ulp" : "difference");
  for (size_t i = 0; i < c.worst.size() && i < kWorstShown; ++i) {
    const ComparePoint& p = c.worst[i];
    std::string got = esc(value_text(t, p.got));
    if (p.interval) got += fmt::format(" <small>(accepted [{}, {}])</small>", esc(value_text(t, p.accepted_lo)),
                                       esc(value_text(t, p.accepted_hi)));
    if (p.poison) got += " <b>[poison]</b>";
    const double ulps = ulp_distance(t, p.expected_rounded, p.got);
    html += fmt::format("<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td>"
                        "<td>{}</td><td>{}</td><td>{}</td></tr>",
                        esc(nlohmann::json(p.index).dump()), esc(p.where), esc(value_text(t, p.expected_rounded)), got,
                        std::isnan(ulps) ? "n/a" : esc(fmt::format("{:.0f}", ulps)), esc(short_text(p.abs_err)),
                        esc(short_text(p.allowed)), esc(reference_text(t, p.expected)));
  }
  html += "</table>";
  if (c.worst.size() > kWorstShown) {
    html += fmt::format("<p><small>{} more in the case file</small></p>", c.worst.size() - kWorstShown);
  }
  return html;
}

// The error strip's colour scale, under every strip.
constexpr const char* kAxisLegend =
    "<p class=\"legend\"><small>share of the allowance used: <span class=\"sw\" style=\"background:#cfd8dc\"></span>"
    " &le; 0.1 <span class=\"sw\" style=\"background:#f9a825\"></span> &le; 1 <span class=\"sw\" "
    "style=\"background:#c62828\"></span> beyond the allowance, or a mismatch where none is allowed</small></p>";

// The first kFailuresOpen failures are unfolded; the rest show their headline until clicked, so the
// case table stays within reach on a run where everything fails.
constexpr size_t kFailuresOpen = 10;

// The error picture of a failing output: one cell per slice of its first dimension, named in the
// operator's terms (CompareResult::axis_name, "dim 0" when it has none), coloured by the largest
// share of the allowance used there (grey: within a tenth; amber: within the allowance; red:
// beyond it), so a defect confined to some experts, batches or token rows shows as a pattern. The
// cells' titles give the index range and the share; the legend under the strip the colours.
std::string axis_strip(const CompareResult& c) {
  const CompareMetrics& m = c.metrics;
  if (m.axis_budget.empty() || m.axis_rows <= 0) return "";
  const size_t n = m.axis_budget.size();
  const std::string axis = c.axis_name.empty() ? std::string("dim 0") : c.axis_name;
  const int64_t width = static_cast<int64_t>(std::max<size_t>(4, 512 / n));
  std::string svg = fmt::format(
      "<p class=\"axis-label\"><small>{}: error along {} (dim 0: {} indices in {} cells; share of the allowance)"
      "</small></p><svg class=\"axis\" width=\"{}\" height=\"18\" role=\"img\" data-output=\"{}\">",
      esc(c.name), esc(axis), m.axis_rows, n, width * static_cast<int64_t>(n), esc(c.name));
  for (size_t k = 0; k < n; ++k) {
    const int64_t lo = static_cast<int64_t>(k) * m.axis_rows / static_cast<int64_t>(n);
    const int64_t hi = (static_cast<int64_t>(k) + 1) * m.axis_rows / static_cast<int64_t>(n) - 1;
    const double v = m.axis_budget[k];
    const char* fill = v > 1 ? "#c62828" : (v > 0.1 ? "#f9a825" : "#cfd8dc");
    const std::string share = v >= CompareMetrics::kAxisFailing ? std::string("mismatch") : metric(v);
    svg += fmt::format("<rect x=\"{}\" y=\"0\" width=\"{}\" height=\"18\" fill=\"{}\"><title>{} {}{}: {}</title></rect>",
                       static_cast<int64_t>(k) * width, width - 1, fill, esc(axis), lo,
                       hi > lo ? fmt::format("-{}", hi) : std::string(), share);
  }
  return svg + "</svg>" + kAxisLegend;
}

std::string failure_block(const CaseResult& r, bool open) {
  std::string html = fmt::format("<details class=\"failure\" data-verdict=\"{}\"{}><summary>{} <code>{}</code> "
                                 "<small>{}</small></summary>",
                                 verdict_name(r.verdict), open ? " open" : "", badge(r.verdict), esc(r.id),
                                 esc(r.reason));
  html += fmt::format("<p>repro: <code class=\"repro\">{}</code><br>case file: <a class=\"case-file\" "
                      "href=\"{}\">failed/{}.json</a></p>",
                      esc(r.repro), failed_href(r.id), esc(r.id));
  for (const auto& w : r.warnings) html += fmt::format("<p class=\"warning\">warning: {}</p>", esc(w));
  for (const auto& o : r.outputs) {
    if (!o.compare.passed) html += axis_strip(o.compare) + worst_table(o.compare, o.plan.device_dtype);
  }
  return html + "</details>";
}

std::string failures_section(const std::vector<CaseResult>& results) {
  std::string blocks;
  size_t n = 0;
  for (const auto& r : results) {
    if (!is_failure(r.verdict)) continue;
    blocks += failure_block(r, n < kFailuresOpen);
    ++n;
  }
  if (n == 0) return "<section id=\"failures\"><h2>Failures</h2><p>none</p></section>";
  return fmt::format("<section id=\"failures\"><h2>Failures ({})</h2>{}</section>", n, blocks);
}

const char* change_color(BaselineChange c) {
  switch (c) {
    case BaselineChange::kNewFailure:
    case BaselineChange::kMissing:
    case BaselineChange::kStillFailing: return "#c62828";
    case BaselineChange::kDrift: return "#ef6c00";
    case BaselineChange::kFixed: return "#2e7d32";
    default: return "#757575";
  }
}

// The findings against the baseline in diff_with_baseline's order (most serious first), with the
// counts per change; unchanged cases only as a count.
std::string baseline_section(const BaselineDiff& diff, const std::string& path) {
  constexpr BaselineChange kChanges[] = {BaselineChange::kNewFailure, BaselineChange::kMissing,
                                         BaselineChange::kDrift,      BaselineChange::kStillFailing,
                                         BaselineChange::kFixed,      BaselineChange::kChanged,
                                         BaselineChange::kNewCase};
  std::string html = fmt::format("<section id=\"baseline\"><h2>Against the baseline</h2><p>baseline: "
                                 "<code>{}</code></p><p id=\"baseline-counts\">",
                                 esc(path));
  for (BaselineChange c : kChanges) {
    const int64_t n = diff.count(c);
    if (n > 0) {
      html += fmt::format("<span class=\"v\" style=\"background:{}\" data-change=\"{}\">{} {}</span> ",
                          change_color(c), baseline_change_name(c), baseline_change_name(c), n);
    }
  }
  html += fmt::format("unchanged {}</p>", diff.unchanged);
  if (diff.findings.empty()) return html + "</section>";
  html += "<table id=\"baseline-findings\"><tr><th>change</th><th>case</th><th>before</th><th>now</th>"
          "<th>detail</th></tr>";
  for (const BaselineFinding& f : diff.findings) {
    html += fmt::format("<tr data-change=\"{}\"><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td>"
                        "<td>{}</td></tr>",
                        baseline_change_name(f.change), baseline_change_name(f.change), esc(f.id),
                        f.before.empty() ? "(absent)" : esc(f.before), f.after.empty() ? "(not run)" : esc(f.after),
                        esc(f.detail));
  }
  return html + "</table></section>";
}

std::string outputs_cell(const CaseResult& r) {
  std::string html;
  for (const auto& o : r.outputs) {
    const CompareResult& c = o.compare;
    const CompareMetrics& m = c.metrics;
    html += fmt::format("<div><b>{}</b> {} {}: abs {} rel {} mere {} rmse {} cos {} eb {}<br><small>{}</small><br>{}</div>",
                        esc(c.name), esc(c.standard), c.passed ? "ok" : "<b style=\"color:#c62828\">FAIL</b>",
                        metric(m.max_abs), metric(m.max_rel), metric(m.mere), metric(m.rmse), metric(m.cosine),
                        metric(m.error_balance), determined_and_balance(m), ulp_svg(m.ulp_hist));
  }
  return html;
}

std::string case_row(const CaseResult& r) {
  const double budget = case_budget(r);
  std::string html = fmt::format("<tr class=\"case\" data-op=\"{}\" data-verdict=\"{}\" data-id=\"{}\">", esc(r.op),
                                 verdict_name(r.verdict), esc(r.id));
  html += fmt::format("<td><code>{}</code></td><td>{}</td><td>{}</td>", esc(r.id), esc(r.op), esc(r.tier));
  html += fmt::format("<td data-key=\"{}\">{}</td>", verdict_name(r.verdict), badge(r.verdict));
  html += r.outputs.empty() ? std::string("<td data-key=\"-1\">&mdash;</td>")
                            : budget_cell(budget);
  html += fmt::format("<td>{}", esc(r.reason));
  if (is_failure(r.verdict)) html += fmt::format("<br>repro: <code>{}</code>", esc(r.repro));
  html += fmt::format("</td><td>{}</td><td data-key=\"{}\">{:.1f}</td></tr>", outputs_cell(r), sort_key(r.total_ms),
                      r.total_ms);
  return html;
}

// Filters (operator, verdict, text) and the table, failures first; the table sorts by a click on
// any header (numeric columns by data-key).
std::string case_table(const std::vector<CaseResult>& results) {
  std::vector<const CaseResult*> order;
  std::map<std::string, int> ops;
  VerdictCounts present{};
  for (const auto& r : results) {
    order.push_back(&r);
    ++ops[r.op];
    ++present[static_cast<size_t>(r.verdict)];
  }
  std::stable_sort(order.begin(), order.end(), [](const CaseResult* a, const CaseResult* b) {
    return is_failure(a->verdict) > is_failure(b->verdict);
  });
  std::string html = "<h2>Cases</h2><p class=\"filters\">operator <select id=\"f-op\"><option value=\"\">all</option>";
  for (const auto& [op, n] : ops) html += fmt::format("<option value=\"{}\">{}</option>", esc(op), esc(op));
  html += "</select> verdict <select id=\"f-verdict\"><option value=\"\">all</option>";
  for (size_t i = 0; i < kVerdictCount; ++i) {
    if (present[i] > 0) html += fmt::format("<option>{}</option>", verdict_name(static_cast<Verdict>(i)));
  }
  html += "</select> text <input id=\"f-text\" type=\"search\" placeholder=\"id, reason, repro\"> "
          "<span id=\"f-shown\"></span></p>"
          "<table id=\"cases\"><thead><tr><th data-col=\"0\">case</th><th data-col=\"1\">operator</th>"
          "<th data-col=\"2\">tier</th><th data-col=\"3\">verdict</th><th data-col=\"4\" data-num>budget used</th>"
          "<th data-col=\"5\">reason</th><th data-col=\"6\">outputs: check, max abs, max rel, MERE, RMSE, cosine, "
          "error balance; determined elements and error-balance counts; ULP histogram</th>"
          "<th data-col=\"7\" data-num>ms</th></tr></thead><tbody>";
  for (const CaseResult* r : order) html += case_row(*r);
  return html + "</tbody></table>";
}

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;margin-bottom:1em}"
    "td,th{border:1px solid #ddd;padding:3px 6px;font-size:13px;vertical-align:top;text-align:left}"
    "#settings th{background:#f5f5f5;font-weight:normal}td.n{text-align:right}"
    ".v{color:#fff;font-weight:bold;padding:1px 5px;border-radius:3px}code{font-size:12px}"
    ".failure{border-left:4px solid #c62828;padding:0 0 0 10px;margin:0 0 1.2em}"
    ".failure summary{cursor:pointer;margin:0 0 4px}.worst td{font-family:monospace;font-size:12px}"
    "#cases thead th{cursor:pointer;background:#f5f5f5}#cases thead th[aria-sort]{background:#e3f2fd}"
    ".filters{position:sticky;top:0;background:#fff;padding:4px 0}"
    "td.std.ok{background:#e8f5e9}td.std.bad{background:#ffebee;font-weight:bold}td.std.na{color:#777}"
    ".note{color:#555;font-size:13px}.legend{margin:2px 0 6px;color:#555}"
    // Long ids, paths and repro lines may break anywhere: the tables fit a 1400 px screen.
    "#cases td,.worst td,code.repro{overflow-wrap:anywhere}"
    ".sw{display:inline-block;width:10px;height:10px;vertical-align:middle;border:1px solid #999}"
    ".banner{padding:8px 14px;margin:0 0 8px;border-radius:4px;color:#fff}.banner h1{margin:0 0 4px;font-size:24px}"
    ".banner.fail{background:#c62828}.banner.pass{background:#2e7d32}.banner .facts{margin:2px 0;font-size:14px}";

// Filters and sorting. The filter state lives in the URL fragment (#op=..&verdict=..&text=..), so
// a filtered view is a link people can share and the browser test can open.
constexpr const char* kScript = R"JS(
(function () {
  var op = document.getElementById('f-op'), verdict = document.getElementById('f-verdict');
  var text = document.getElementById('f-text'), shown = document.getElementById('f-shown');
  var body = document.querySelector('#cases tbody');
  function rows() { return Array.prototype.slice.call(body.querySelectorAll('tr.case')); }
  function apply() {
    var t = text.value.toLowerCase(), n = 0, all = rows();
    all.forEach(function (r) {
      var ok = (!op.value || r.dataset.op === op.value) && (!verdict.value || r.dataset.verdict === verdict.value) &&
               (!t || r.textContent.toLowerCase().indexOf(t) >= 0);
      r.hidden = !ok;
      if (ok) n++;
    });
    shown.textContent = n + ' of ' + all.length + ' cases shown';
  }
  function setOption(select, value) {
    for (var i = 0; i < select.options.length; i++) {
      if (select.options[i].value === value) { select.value = value; return; }
    }
  }
  function fromHash() {
    if (location.hash.indexOf('=') < 0) { apply(); return; }  // a plain anchor (#failures), not a filter
    var p = new URLSearchParams(location.hash.slice(1));
    setOption(op, p.get('op') || ''); setOption(verdict, p.get('verdict') || ''); text.value = p.get('text') || '';
    apply();
  }
  function toHash() {
    var p = new URLSearchParams();
    if (op.value) p.set('op', op.value);
    if (verdict.value) p.set('verdict', verdict.value);
    if (text.value) p.set('text', text.value);
    history.replaceState(null, '', p.toString() ? '#' + p.toString() : location.pathname + location.search);
    apply();
  }
  [op, verdict].forEach(function (e) { e.addEventListener('change', toHash); });
  text.addEventListener('input', toHash);
  window.addEventListener('hashchange', fromHash);
  document.querySelectorAll('#cases thead th').forEach(function (th) {
    th.addEventListener('click', function () {
      var col = +th.dataset.col, num = th.hasAttribute('data-num');
      var dir = th.getAttribute('aria-sort') === 'ascending' ? -1 : 1;
      document.querySelectorAll('#cases thead th').forEach(function (h) { h.removeAttribute('aria-sort'); });
      th.setAttribute('aria-sort', dir > 0 ? 'ascending' : 'descending');
      function key(r) {
        var c = r.cells[col], k = c.dataset.key !== undefined ? c.dataset.key : c.textContent;
        return num ? Number(k) : k.toLowerCase();
      }
      rows().sort(function (a, b) {
        var x = key(a), y = key(b);
        return dir * (x < y ? -1 : x > y ? 1 : 0);
      }).forEach(function (r) { body.appendChild(r); });
    });
  });
  fromHash();
})();
)JS";

}  // namespace

std::string render_html_report(const nlohmann::json& run_info, const std::vector<CaseResult>& results,
                               const VerdictCounts& counts, const BaselineDiff* baseline,
                               const std::string& baseline_path, const std::vector<BudgetTrend>* trends) {
  // The first screen: the verdict in the title and banner, then the failures (their pictures too).
  std::string html = fmt::format("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{}</title><style>",
                                 esc(report_title(run_info, counts)));
  html += kStyle;
  html += "</style></head><body>" + report_banner(run_info, counts) +
          "<p><a href=\"#ops\">operators</a> &middot; <a href=\"#failures\">failures</a> &middot; "
          "<a href=\"#cases\">all cases</a>";
  if (baseline != nullptr) html += " &middot; <a href=\"#baseline\">baseline</a>";
  if (trends != nullptr) html += " &middot; <a href=\"#trends\">trends</a>";
  html += "</p>";
  html += verdict_counts(counts);
  html += failures_section(results);
  html += operator_summary(results);
  html += stage_times(results);
  html += settings_table(run_info);
  html += standards_section(results);
  if (baseline != nullptr) html += baseline_section(*baseline, baseline_path);
  if (trends != nullptr) html += trends_section(*trends);
  html += case_table(results);
  html += "<script>";
  html += kScript;
  return html + "</script></body></html>\n";
}

}  // namespace opgate
