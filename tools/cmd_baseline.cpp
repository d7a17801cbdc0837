// `opgate baseline accept` (a report becomes the baseline) and `opgate baseline diff` (a finished or
// merged report against the baseline; `run --baseline` does the same at the end of a run).
#include <fmt/format.h>

#include "reports/baseline.h"
#include "core/version.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace opgate::cli {

void add_baseline(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("baseline", "Accept a report as the baseline, or compare a report with it");
  cmd->require_subcommand(1);

  auto* accept = cmd->add_subcommand("accept", "Install a report's results as the accepted baseline");
  auto report = std::make_shared<std::string>();
  auto to = std::make_shared<std::string>();
  accept->add_option("report", *report, "Report folder (from run or merge) or its results.jsonl")->required();
  accept->add_option("--to", *to, "Baseline folder to write (results.jsonl + baseline.json)")->required();
  accept->callback([report, to, &exit_code] {
    const Status st = accept_baseline(*report, *to, harness_version());
    if (!st.is_ok()) {
      exit_code = fail(st);
      return;
    }
    fmt::print("baseline: {} accepted from {}\n", *to, *report);
    exit_code = 0;
  });

  auto* diff = cmd->add_subcommand("diff", "Compare a report with the baseline; exit 1 when the gate fails");
  auto flags = std::make_shared<BaselineFlags>();
  auto current = std::make_shared<std::string>();
  auto strict = std::make_shared<bool>(false);
  add_baseline_flags(diff, *flags, false);
  diff->add_option("report", *current, "Report folder to judge (a merged report for sharded runs) or its results.jsonl")
      ->required();
  diff->add_flag("--strict", *strict, "MISTRUSTED cases fail the gate");
  diff->callback([flags, current, strict, &exit_code] {
    auto baseline = read_baseline(flags->path);
    if (!baseline) {
      exit_code = fail(baseline.status());
      return;
    }
    // The folder, also for a results.jsonl argument: baseline.txt and baseline.json go beside it.
    auto folder = report_folder(*current);
    if (!folder) {
      exit_code = fail(folder.status());
      return;
    }
    flags->options.strict = *strict;
    // The report is complete (merged), so every baseline case is in scope.
    auto code = gate_against_baseline(*baseline, *flags, *folder, [](const CaseResult&) { return true; });
    exit_code = code ? *code : fail(code.status());
  });
}

}  // namespace opgate::cli
