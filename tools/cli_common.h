// Shared pieces of the opgate sub-commands: locating the repository's case and golden folders,
// selecting cases (op, tier, files, filter, shard) and printing errors the one way.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/baseline.h"
#include "core/case.h"
#include "core/op_registry.h"
#include "core/status.h"

namespace opgate::cli {

constexpr int kExitUsage = 2;

// The folder that holds cases/ and golden/: --root if given, else the current directory when it
// has cases/, else the source tree this binary was built from.
std::string repo_root(const std::string& flag);

struct Selection {
  std::vector<std::string> ops;    // stems, names or short names; empty = all
  std::vector<std::string> tiers;  // file stems; empty = {"ci"}
  std::vector<std::string> files;  // explicit case files (override ops/tiers)
  std::string filter;              // ECMAScript regex on id or tag
  std::string shard;               // "i/N"; GTEST_SHARD_INDEX / GTEST_TOTAL_SHARDS otherwise
};

// The operator an --op names (stem, aclnn name or short name); the error lists the known ones.
Expected<const OpInfo*> resolve_op(const std::string& name);
// The shard this process runs: --shard, else GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS, else 0/1.
Expected<std::pair<int, int>> selected_shard(const Selection& s);
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
Expected<int> gate_against_baseline(const std::vector<CaseResult>& baseline, const BaselineFlags& f,
                                    const std::string& report_dir, const BaselineScope& scope);

// Prints "opgate: error: <message>" to stderr and returns kExitUsage.
int fail(const Status& st);

}  // namespace opgate::cli
