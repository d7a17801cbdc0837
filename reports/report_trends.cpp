// The history trends of a run's failing outputs, read from the history file (history/) for
// report.html's trends section.
#include "reports/report_trends.h"

#include <limits>

#include <fmt/format.h>

#include "history/history_db.h"
#include "history/history_query.h"

namespace opgate {

Expected<std::vector<BudgetTrend>> history_trends(const std::string& history_path,
                                                  const std::vector<CaseResult>& results, int64_t last) {
  constexpr size_t kMaxTrends = 30;  // a red night's chart stays readable
  OPGATE_ASSIGN_OR_RETURN(history::HistoryDb db, history::HistoryDb::open_for_reading(history_path));
  std::vector<BudgetTrend> out;
  for (const CaseResult& r : results) {
    if (!verdict_fails(r.verdict, true)) continue;
    for (const OutputResult& o : r.outputs) {
      if (o.compare.passed || out.size() >= kMaxTrends) continue;
      OPGATE_ASSIGN_OR_RETURN(history::Trend t, history::budget_trend(db, r.id, o.compare.name, last));
      BudgetTrend bt{r.id, o.compare.name, {}, {}, {}, {}, {}};
      for (const history::TrendPoint& p : t.points) {
        const std::string& rev = p.result.run.kernel_rev;
        bt.runs.push_back(fmt::format("run {} {}{}", p.result.run.run_id, p.result.run.started_at,
                                      rev.empty() ? "" : " (" + rev + ")"));
        bt.dates.push_back(p.result.run.started_at);
        bt.revs.push_back(rev);
        const auto b = p.budget_used.find(o.compare.name);
        bt.budget.push_back(b == p.budget_used.end() ? std::numeric_limits<double>::quiet_NaN() : b->second);
        const auto passed = p.passed.find(o.compare.name);
        bt.failed.push_back(passed != p.passed.end() && !passed->second);
      }
      out.push_back(std::move(bt));
    }
  }
  return out;
}

}  // namespace opgate
