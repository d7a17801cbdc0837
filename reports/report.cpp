// summary.txt, junit.xml and report.html are rebuilt from results.jsonl at the end, so a resumed or
// merged run reports every case exactly once.
#include "reports/report.h"

#include <ctime>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "core/markup.h"
#include "core/npy.h"
#include "reports/report_junit.h"
#include "reports/report_standards.h"
#include "reports/report_trends.h"
#include "reports/result_text.h"
#include "reports/run_facts.h"

namespace opgate {

std::string summary_text(const nlohmann::json& run_info, const std::vector<CaseResult>& results,
                         const VerdictCounts& counts) {
  // MISTRUSTED fails the gate with --strict, and then in summary.txt and junit.xml too.
  const bool strict = run_info.is_object() && run_info.value("strict", false);
  std::string failures;
  size_t n_failures = 0;
  for (const auto& r : results) {
    if (!verdict_fails(r.verdict, strict)) continue;
    ++n_failures;
    failures += fmt::format("{} {}: {}\n", verdict_name(r.verdict), printable(r.id), printable(r.reason));
    // Each failing output's worst element, in the units of its dtype (ulps beside the values).
    for (const auto& o : r.outputs) {
      if (o.compare.passed || o.compare.worst.empty()) continue;
      const ComparePoint& p = o.compare.worst.front();
      failures += printable(fmt::format("    {} {} {}: {}", o.compare.name, nlohmann::json(p.index).dump(), p.where,
                                        point_text(o.plan.device_dtype, p))) + "\n";
    }
    failures += fmt::format("    repro: {}\n", printable(r.repro));
  }
  const std::string backend = printable(recorded_backend(run_info));
  std::string s = fmt::format("opgate: {} of {} cases failed{}\n", n_failures, results.size(),
                              backend.empty() ? "" : " on " + backend);
  std::istringstream facts(facts_lines(run_info));  // printable per line: a value cannot add lines
  for (std::string line; std::getline(facts, line);) s += printable(line) + "\n";
  if (n_failures > 0) s += fmt::format("\nfailed cases ({}):\n{}", n_failures, failures);
  s += "\n" + standards_summary(results);
  s += stage_time_line(results);
  s += fmt::format("opgate run {}\n", run_info.dump());
  return s + counts_line(counts) + "\n";
}

Status finish_report(ReportWriter& writer, const std::string& history) {
  OPGATE_ASSIGN_OR_RETURN(auto results, read_results(writer.dir() + "/results.jsonl"));
  VerdictCounts counts{};
  for (const auto& r : results) ++counts[static_cast<size_t>(r.verdict)];
  writer.set_counts(counts);
  // The folder's run.json (a resumed run keeps its first start) gains the end of the run.
  OPGATE_ASSIGN_OR_RETURN(RunInfoFile run, read_run_info(writer.dir()));
  const bool has_run_json = run.path == writer.dir() + "/run.json" && run.info.is_object();
  nlohmann::json info = has_run_json ? run.info : writer.run_info();
  add_end_facts(info, std::time(nullptr));
  if (has_run_json) {
    OPGATE_TRY(writer.write_file("run.json", info.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
  }
  OPGATE_TRY(writer.write_file("summary.txt", summary_text(info, results, counts)));
  OPGATE_TRY(writer.write_file("junit.xml", render_junit(info, results, utc_timestamp(), host_name())));
  std::optional<std::vector<BudgetTrend>> trends;
  if (!history.empty()) {
    OPGATE_ASSIGN_OR_RETURN(std::vector<BudgetTrend> t, history_trends(history, results));
    trends = std::move(t);
  }
  return writer.write_file("report.html",
                           render_html_report(info, results, counts, nullptr, "", trends ? &*trends : nullptr));
}

Status rewrite_report_html(const std::string& report_dir, const std::vector<CaseResult>& current,
                           const BaselineDiff* diff, const std::string& baseline_path,
                           const std::vector<BudgetTrend>* trends) {
  OPGATE_ASSIGN_OR_RETURN(RunInfoFile run, read_run_info(report_dir));
  VerdictCounts counts{};
  for (const CaseResult& r : current) ++counts[static_cast<size_t>(r.verdict)];
  return write_file_atomic(report_dir + "/report.html",
                           render_html_report(run.info, current, counts, diff, baseline_path, trends));
}

}  // namespace opgate
