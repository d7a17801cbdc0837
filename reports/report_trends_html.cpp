// report.html's trends section: each failing output's budget_used over the history's last runs,
// the telling trends first (a new failure, a flip between pass and fail, a drift of the value),
// the flat ones (same value and verdict every run) collapsed into one row per shape.
#include "reports/report_trends.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/markup.h"
#include "core/result_json.h"
#include "reports/units.h"

namespace opgate {
namespace {

std::string esc(const std::string& s) { return xml_escape(s); }

// A run's axis label: its date and kernel rev ("12-07 abc1234"), else its label.
std::string run_axis(const BudgetTrend& t, size_t i) {
  std::string s = i < t.dates.size() ? t.dates[i].substr(5, 5) : "";  // MM-DD of an ISO date
  if (i < t.revs.size() && !t.revs[i].empty()) s += (s.empty() ? "rev " : " ") + t.revs[i].substr(0, 8);
  return s.empty() && i < t.runs.size() ? t.runs[i] : s;
}

// budget_used of one output across the last runs: a line on a log scale (log10(1 + budget), so
// 0.5 and 4068 fit one chart), a dot per run, red where the output failed; the allowance dashed
// and named (under the line when it is at the top), the first and last runs' date and rev under
// the line; titles give each run's value.
std::string trend_svg(const BudgetTrend& t) {
  constexpr double kW = 240, kH = 40;
  const size_t n = t.budget.size();
  double top = std::log10(2.0);  // at least the allowance (budget 1) fits
  for (double b : t.budget) {
    if (std::isfinite(b)) top = std::max(top, std::log10(1 + b));
  }
  auto x = [&](size_t i) { return n <= 1 ? kW / 2 : 6 + (kW - 12) * static_cast<double>(i) / static_cast<double>(n - 1); };
  auto y = [&](double b) { return kH - 4 - (kH - 8) * std::log10(1 + b) / top; };
  std::string line, dots;
  for (size_t i = 0; i < n; ++i) {
    const double b = t.budget[i];
    if (!std::isfinite(b)) continue;
    line += fmt::format("{}{:.1f},{:.1f}", line.empty() ? "" : " ", x(i), y(b));
    dots += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}: {}{}</title></circle>", x(i),
                        y(b), t.failed[i] ? "#c62828" : "#2e7d32", esc(t.runs[i]), esc(short_text(b)),
                        t.failed[i] ? " (failed)" : "");
  }
  std::string axis;
  if (n > 0) axis += fmt::format("<text x=\"0\" y=\"52\" font-size=\"9\">{}</text>", esc(run_axis(t, 0)));
  if (n > 1) {
    axis += fmt::format("<text x=\"{}\" y=\"52\" font-size=\"9\" text-anchor=\"end\">{}</text>", kW,
                        esc(run_axis(t, n - 1)));
  }
  return fmt::format("<svg class=\"trend\" width=\"{}\" height=\"56\" role=\"img\"><line x1=\"0\" x2=\"{}\" y1=\"{:.1f}\" "
                     "y2=\"{:.1f}\" stroke=\"#999\" stroke-dasharray=\"3\"/><text x=\"{}\" y=\"{:.1f}\" font-size=\"8\" "
                     "fill=\"#777\" text-anchor=\"end\">allowance</text><polyline points=\"{}\" fill=\"none\" "
                     "stroke=\"#607d8b\"/>{}{}</svg>",
                     kW, kW, y(1), y(1), kW, y(1) < 12 ? y(1) + 9 : y(1) - 2, line, dots, axis);
}

}  // namespace

std::string trend_story(const BudgetTrend& t) {
  const size_t n = t.budget.size();
  if (n == 0) return "";
  size_t flips = 0;
  for (size_t i = 1; i < n; ++i) flips += t.failed[i] != t.failed[i - 1];
  if (flips == 1 && t.failed.back()) return "new failure";
  if (flips > 0) return fmt::format("flaky ({} flips)", flips);
  double lo = INFINITY, hi = -INFINITY;
  for (double b : t.budget) {
    if (!std::isfinite(b)) continue;
    lo = std::min(lo, b);
    hi = std::max(hi, b);
  }
  // Drift: the value moved by more than a tenth (of the larger), beyond what printing rounds away.
  if (hi > lo && (hi - lo) > 0.1 * std::fabs(hi)) return "drift";
  return "";
}

std::string trends_section(const std::vector<BudgetTrend>& trends) {
  std::string html = "<h2 id=\"trends\">Trends of failing cases (budget used over the last runs)</h2>";
  if (trends.empty()) return html + "<p>No case failed in this run.</p>";
  // The telling trends in their order, then one row per shape of the flat ones (same values,
  // verdicts and runs), naming every output that has it.
  std::vector<const BudgetTrend*> telling;
  std::vector<std::pair<const BudgetTrend*, std::vector<const BudgetTrend*>>> flat;
  for (const BudgetTrend& t : trends) {
    if (!trend_story(t).empty()) {
      telling.push_back(&t);
      continue;
    }
    auto same = std::find_if(flat.begin(), flat.end(), [&](const auto& g) {
      return g.first->budget == t.budget && g.first->failed == t.failed && g.first->runs == t.runs;
    });
    if (same == flat.end()) {
      flat.push_back({&t, {&t}});
    } else {
      same->second.push_back(&t);
    }
  }
  html += fmt::format("<p class=\"note\">{} telling (new failure, flaky, drift) first; {} flat trend(s) in {} row(s); "
                      "dots: green passed, red failed; the value is |error| / allowance</p>",
                      telling.size(), trends.size() - telling.size(), flat.size());
  html += "<table id=\"trend-table\"><tr><th>case</th><th>output</th><th>trend</th><th>first &rarr; last</th>"
          "<th>budget used per run (log scale)</th></tr>";
  // A failed run says so: an exact output fails with budget 0 (it has no allowance to use).
  auto value = [](const BudgetTrend& t, size_t i) {
    return budget_text(t.budget[i]) + (i < t.failed.size() && t.failed[i] ? " (failed)" : "");
  };
  auto values = [&](const BudgetTrend& t) {
    if (t.budget.empty()) return std::string("&mdash;");
    return fmt::format("<span title=\"{} &rarr; {}\">{} &rarr; {}</span>", esc(number_text(t.budget.front())),
                       esc(number_text(t.budget.back())), esc(value(t, 0)), esc(value(t, t.budget.size() - 1)));
  };
  for (const BudgetTrend* t : telling) {
    html += fmt::format("<tr class=\"trend\" data-id=\"{}\"><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td>"
                        "<td>{}</td></tr>",
                        esc(t->case_id), esc(t->case_id), esc(t->output), esc(trend_story(*t)), values(*t),
                        trend_svg(*t));
  }
  for (const auto& [shape, members] : flat) {
    std::string ids;
    for (const BudgetTrend* m : members) {
      ids += fmt::format("{}<code>{}</code> {}", ids.empty() ? "" : "<br>", esc(m->case_id), esc(m->output));
    }
    html += fmt::format("<tr class=\"trend flat\" data-id=\"{}\"><td colspan=\"2\">{}</td><td>flat, {} output(s)</td>"
                        "<td>{}</td><td>{}</td></tr>",
                        esc(shape->case_id), ids, members.size(), values(*shape), trend_svg(*shape));
  }
  return html + "</table>";
}

}  // namespace opgate
