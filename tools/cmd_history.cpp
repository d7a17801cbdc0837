// `opgate history`: questions to the run history that `opgate run --history FILE` records
// (history/). Read-only; bad input (no file, not SQLite, corrupt, an unknown case) is one error
// line and exit 2.
#include <memory>
#include <string>

#include <fmt/format.h>

#include "history/history_db.h"
#include "history/history_format.h"
#include "history/history_query.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace opgate::cli {
namespace {

struct HistoryFlags {
  std::string db;
  bool json = false;
  std::string failing_since;
  std::string case_id, output;
  int64_t last = 30;
};

// Opens the database, answers, prints text or JSON; returns the exit code.
template <class Query, class Text, class Json>
int answer(const HistoryFlags& f, Query query, Text text, Json json) {
  auto db = history::HistoryDb::open_for_reading(f.db);
  if (!db) return fail(db.status());
  auto result = query(*db);
  if (!result) return fail(result.status());
  if (f.json) fmt::print("{}\n", json(*result).dump(2));
  else fmt::print("{}", text(*result));
  return 0;
}

}  // namespace

void add_history(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("history", "Query the run history that `opgate run --history FILE` records");
  cmd->require_subcommand(1);
  auto f = std::make_shared<HistoryFlags>();
  cmd->add_option("--db", f->db, "The history database (SQLite)")->envname("OPGATE_HISTORY")->required();
  cmd->add_flag("--json", f->json, "Print JSON instead of text");

  auto* cases = cmd->add_subcommand("cases", "Cases failing in their latest result, and since which run");
  cases->add_option("--failing-since", f->failing_since,
                    "Only failure streaks that started at or after RUN (a run id) or DATE (2026-12-01[T18:00:00Z])")
      ->expected(0, 1);
  cases->callback([f, &exit_code] {
    exit_code = answer(
        *f, [&](const history::HistoryDb& db) { return history::failing_cases(db, f->failing_since); },
        history::failing_text, history::failing_json);
  });

  auto* flaky = cmd->add_subcommand("flaky", "Cases whose verdict changed between runs of the same --kernel-rev");
  flaky->callback([f, &exit_code] {
    int64_t unrevisioned = 0;
    exit_code = answer(
        *f, [&](const history::HistoryDb& db) { return history::flaky_cases(db, &unrevisioned); },
        [&](const auto& c) { return history::flaky_text(c, unrevisioned); },
        [&](const auto& c) { return history::flaky_json(c, unrevisioned); });
  });

  auto* runs = cmd->add_subcommand("runs", "The recorded runs: date, kernel rev, backend, tiers, exit code, counts");
  runs->add_option("--last", f->last, "The last N runs (default 30)")->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  runs->callback([f, &exit_code] {
    exit_code = answer(
        *f, [&](const history::HistoryDb& db) { return history::recorded_runs(db, f->last); }, history::runs_text,
        history::runs_json);
  });

  auto* trend = cmd->add_subcommand("trend", "budget_used of a case's outputs per run, with a sparkline");
  trend->add_option("--case", f->case_id, "Case id")->required();
  trend->add_option("--output", f->output, "One output (default: all)");
  trend->add_option("--last", f->last, "The last N results (default 30)")->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  trend->callback([f, &exit_code] {
    exit_code = answer(
        *f, [&](const history::HistoryDb& db) { return history::budget_trend(db, f->case_id, f->output, f->last); },
        history::trend_text, history::trend_json);
  });

  auto* first_bad = cmd->add_subcommand("first-bad", "The first run of a case's current failure streak, and the "
                                                     "kernel revs of the last good and first bad runs");
  first_bad->add_option("--case", f->case_id, "Case id")->required();
  first_bad->callback([f, &exit_code] {
    exit_code = answer(
        *f, [&](const history::HistoryDb& db) { return history::first_bad(db, f->case_id); },
        history::first_bad_text, history::first_bad_json);
  });
}

}  // namespace opgate::cli
