// Shared pieces of the opgate sub-commands: locating the repository's case and golden folders,
// selecting cases (op, tier, files, filter, shard) and printing errors the one way.
#pragma once

#include <optional>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "reports/baseline.h"
#include "reports/report.h"
#include "reports/report_trends.h"
#include "core/case.h"
#include "cases/registry.h"
#include "core/status.h"

namespace opgate::cli {

constexpr int kExitUsage = 2;

// The folder that holds cases/ and golden/: --root if given, else the current directory when it
// has cases/ (a checkout), else <prefix>/share/opgate beside an installed <prefix>/bin/opgate, else
// the source tree this binary was built from.
// This binary's absolute path (/proc/self/exe), or "opgate" where it cannot be read.
std::string self_exe();
std::string repo_root(const std::string& flag);

struct Selection {
  std::vector<std::string> ops;    // stems, names or short names; empty = all
  std::vector<std::string> tiers;  // file stems; empty = {"ci"}
  std::vector<std::string> files;  // explicit case files (override ops/tiers)
  std::string filter;              // ECMAScript regex on id or tag
  std::string shard;               // "i/N"; the scheduler's variables otherwise (choose_shard)
  int shard_total = 0;             // --shard-total: N for a 0-based JOB_COMPLETION_INDEX; 0 = unset
};

// The operator an --op names (stem, aclnn name or short name); the error lists the known ones.
Expected<const OpInfo*> resolve_op(const std::string& name);
// The shard this process runs and where it came from, first match wins:
//   --shard i/N; OPGATE_SHARD=i/N (Jenkins, anything that sets it itself);
//   CI_NODE_INDEX (1-based) / CI_NODE_TOTAL (GitLab CI `parallel:`; CI_NODE_TOTAL=1 alone, which
//   GitLab sets on every job, is no shard);
//   JOB_COMPLETION_INDEX (0-based, Kubernetes Indexed Job) with the total from --shard-total or
//   OPGATE_SHARD_TOTAL (Kubernetes does not export the Job's completions);
//   GTEST_SHARD_INDEX / GTEST_TOTAL_SHARDS; else 0/1 (source empty).
// A malformed or half-set source is an error naming its variables, never a fall-through.
struct ShardChoice {
  int index = 0, total = 1;  // 0-based
  std::string source;        // e.g. "CI_NODE_INDEX=2 CI_NODE_TOTAL=3 (GitLab CI parallel, 1-based)"
};
Expected<ShardChoice> choose_shard(const Selection& s);
// choose_shard's (index, total).
Expected<std::pair<int, int>> selected_shard(const Selection& s);
// The run header's shard line ("shard 1/3 from ..."); empty when the run is not sharded.
std::string shard_header(const Selection& s);
// For run.json: where the shard came from and the scheduler variables this process saw
// (shard and device variables that are set), so a report says which machine slot produced it.
nlohmann::json scheduler_info(const Selection& s);
// --shard and --shard-total, as `run` and `list` take them.
void add_shard_flags(CLI::App* cmd, Selection& sel);
// What a selection found, so that "nothing matched" and "another shard has it all" read apart.
struct SelectionCounts {
  std::vector<std::string> files;  // case files read
  size_t loaded = 0;               // cases in them
  size_t matched = 0;              // of those, matching --op and --filter (before sharding)
  std::set<std::pair<std::string, std::string>> op_tiers;  // (op, tier) of the cases read for --op
};
// Loads and filters the selected cases; errors name the file, case and field. A case id may occur
// once in the whole selection (ids name report and golden files).
Expected<std::vector<Case>> select_cases(const std::string& root, const Selection& s,
                                         SelectionCounts* counts = nullptr);
// Of `cases`, those of the selection's operators, matching --filter (id or tag) and in its shard;
// `counts` (loaded, matched, op_tiers) accumulate. select_cases ends with this; `run --generate`
// applies it to generated cases.
Expected<std::vector<Case>> keep_selected(std::vector<Case> cases, const Selection& s, SelectionCounts* counts);
// keep_selected's rules, one case at a time (`run --generate` keeps only what it selects, never the
// whole generated sequence).
class CaseSelector {
 public:
  static Expected<CaseSelector> make(const Selection& s);
  // True if `c` is selected; counts it (loaded, matched, op_tiers) like keep_selected.
  bool keep(const Case& c, SelectionCounts& counts) const;

 private:
  std::vector<const OpInfo*> ops_;
  std::optional<std::regex> filter_;
  int shard_index_ = 0, shard_total_ = 1;
};
// Which baseline cases the selection would run: the operators and tiers it read (counts of
// select_cases), its --filter on the id and its shard. A case matched through a tag only is out of
// scope (results do not keep tags), so it is never reported missing.
Expected<BaselineScope> selection_scope(const Selection& s, const SelectionCounts& counts);
// Whether a case id belongs to shard i of n (stable hash of the id).
bool in_shard(const std::string& id, int index, int total);

// The baseline flags of `run` and `baseline diff`.
struct BaselineFlags {
  std::string path;  // a report folder or results.jsonl; empty: no baseline
  bool allow_known_failures = false, fail_on_drift = false;
  BaselineOptions options;
};
void add_baseline_flags(CLI::App* cmd, BaselineFlags& f, bool path_is_option);
// Compares the report in `report_dir` with the baseline, prints and writes baseline.txt and
// baseline.json beside it, and returns the gate's exit code.
// With `trends`, report.html also gets the history trend chart.
Expected<int> gate_against_baseline(const std::vector<CaseResult>& baseline, const BaselineFlags& f,
                                    const std::string& report_dir, const BaselineScope& scope,
                                    const std::vector<BudgetTrend>* trends = nullptr);
// Prints "opgate: error: <message>" to stderr and returns kExitUsage.
int fail(const Status& st);

}  // namespace opgate::cli
