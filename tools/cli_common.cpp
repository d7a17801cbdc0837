// Case selection and repository lookup for the CLI.
#include "tools/cli_common.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <regex>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "core/npy.h"
#include "reports/report_html.h"
#include "history/history_db.h"
#include "history/history_query.h"
#include "cases/registry.h"
#include "core/rng.h"

namespace opgate::cli {
namespace {

Expected<std::optional<std::regex>> filter_regex(const Selection& s) {
  if (s.filter.empty()) return std::optional<std::regex>();
  try {
    return std::optional<std::regex>(std::regex(s.filter, std::regex::ECMAScript));
  } catch (const std::regex_error& e) {
    return parse_error(fmt::format("--filter '{}': invalid regular expression: {}", s.filter, e.what()));
  }
}

bool exists(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0;
}

// Digits only: std::stoi alone would take "4abc", " 4" and "+4".
std::optional<int> parse_count(const std::string& text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return std::nullopt;
  }
  return std::stoi(text);
}

std::optional<std::pair<int, int>> shard_of(const std::string& index, const std::string& total) {
  const auto i = parse_count(index), n = parse_count(total);
  if (!i || !n || *n == 0 || *i >= *n) return std::nullopt;
  return std::make_pair(*i, *n);
}

Expected<std::pair<int, int>> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  auto shard = slash == std::string::npos ? std::nullopt : shard_of(text.substr(0, slash), text.substr(slash + 1));
  if (!shard) return parse_error(fmt::format("--shard '{}': expected i/N with 0 <= i < N", text));
  return *shard;
}

// An environment variable, or nullptr when unset or empty.
const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

std::vector<std::string> unique(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

// Case files named twice (also as ./x.json and x.json) are read once.
std::vector<std::string> unique_files(const std::vector<std::string>& files) {
  std::vector<std::string> out, seen;
  for (const auto& f : files) {
    std::error_code ec;
    std::string key = std::filesystem::weakly_canonical(f, ec).string();
    if (ec) key = f;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    out.push_back(f);
  }
  return out;
}

}  // namespace

std::string self_exe() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("opgate") : exe.string();
}

// The source tree CMake configured this binary from, defined in the generated source_dir.cpp: one
// tiny object holds the per-tree path, so a copy of the tree (tests/scaffold) recompiles nothing else.
const char* configured_source_dir();

std::string repo_root(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (exists("cases") && exists("CMakeLists.txt")) return ".";
  // An installed opgate (`cmake --install`: <prefix>/bin/opgate) reads the case and golden files
  // installed with it, which match its code, rather than a source tree that may have moved on.
  const std::filesystem::path exe = self_exe();
  if (exe.has_parent_path()) {
    const auto installed = exe.parent_path().parent_path() / "share" / "opgate";
    if (exists((installed / "cases").string())) return installed.string();
  }
  return configured_source_dir();
}

bool in_shard(const std::string& id, int index, int total) {
  return total <= 1 || static_cast<int>(fnv1a64(id) % static_cast<uint64_t>(total)) == index;
}

Expected<const OpInfo*> resolve_op(const std::string& name) {
  const OpInfo* op = find_op(name);
  if (op == nullptr) return parse_error(fmt::format("--op '{}': unknown operator (known: {})", name, known_ops_text()));
  return op;
}

Expected<ShardChoice> choose_shard(const Selection& s) {
  if (!s.shard.empty()) {
    OPGATE_ASSIGN_OR_RETURN(auto flag, parse_shard(s.shard));
    return ShardChoice{flag.first, flag.second, "--shard " + s.shard};
  }
  // Errors name the variables: the user never typed a --shard.
  if (const char* v = env("OPGATE_SHARD")) {
    const std::string text = v;
    const auto slash = text.find('/');
    auto shard = slash == std::string::npos ? std::nullopt : shard_of(text.substr(0, slash), text.substr(slash + 1));
    if (!shard) return parse_error(fmt::format("OPGATE_SHARD={}: expected i/N with 0 <= i < N", text));
    return ShardChoice{shard->first, shard->second, "OPGATE_SHARD=" + text};
  }
  // GitLab CI `parallel: N` sets CI_NODE_INDEX = 1..N; CI_NODE_TOTAL is 1 on every other job.
  const char* node_index = env("CI_NODE_INDEX");
  const char* node_total = env("CI_NODE_TOTAL");
  if (node_index != nullptr || (node_total != nullptr && std::string(node_total) != "1")) {
    if (node_index == nullptr) {
      return parse_error(fmt::format("CI_NODE_TOTAL={} is set but CI_NODE_INDEX is not: set both (GitLab CI "
                                     "`parallel:` does), or neither", node_total));
    }
    if (node_total == nullptr) {
      return parse_error(fmt::format("CI_NODE_INDEX={} is set but CI_NODE_TOTAL is not: set both (GitLab CI "
                                     "`parallel:` does), or neither", node_index));
    }
    const auto i = parse_count(node_index), n = parse_count(node_total);
    if (!i || !n || *i < 1 || *i > *n) {
      return parse_error(fmt::format("CI_NODE_INDEX={} CI_NODE_TOTAL={}: expected integers with 1 <= index <= total "
                                     "(GitLab CI counts its parallel jobs from 1)", node_index, node_total));
    }
    return ShardChoice{*i - 1, *n,
                       fmt::format("CI_NODE_INDEX={} CI_NODE_TOTAL={} (GitLab CI parallel, 1-based)", *i, *n)};
  }
  // A Kubernetes Indexed Job exports the pod's 0-based index but not the Job's completions.
  const char* completion = env("JOB_COMPLETION_INDEX");
  const char* total_var = env("OPGATE_SHARD_TOTAL");
  const std::string total_text = s.shard_total > 0 ? std::to_string(s.shard_total) : total_var ? total_var : "";
  const std::string total_name = s.shard_total > 0 ? "--shard-total" : "OPGATE_SHARD_TOTAL";
  if (completion != nullptr) {
    if (total_text.empty()) {
      return parse_error(fmt::format("JOB_COMPLETION_INDEX={} is set (a Kubernetes Indexed Job) but not the number of "
                                     "shards: set OPGATE_SHARD_TOTAL to the Job's completions, or pass --shard-total N",
                                     completion));
    }
    auto shard = shard_of(completion, total_text);
    if (!shard) {
      return parse_error(fmt::format("JOB_COMPLETION_INDEX={} {}={}: expected integers with 0 <= index < total",
                                     completion, total_name, total_text));
    }
    return ShardChoice{shard->first, shard->second,
                       fmt::format("JOB_COMPLETION_INDEX={} {}={} (Kubernetes Indexed Job, 0-based)", shard->first,
                                   total_name, shard->second)};
  }
  if (!total_text.empty()) {
    return parse_error(fmt::format("{}={} is set but JOB_COMPLETION_INDEX is not: the total goes with a Kubernetes "
                                   "Indexed Job's index (elsewhere use --shard i/N or OPGATE_SHARD=i/N)",
                                   total_name, total_text));
  }
  const char* n = env("GTEST_TOTAL_SHARDS");
  const char* i = env("GTEST_SHARD_INDEX");
  if (n == nullptr && i == nullptr) return ShardChoice{};
  if (n == nullptr || i == nullptr) {
    const char* set = n ? "GTEST_TOTAL_SHARDS" : "GTEST_SHARD_INDEX";
    const char* unset = n ? "GTEST_SHARD_INDEX" : "GTEST_TOTAL_SHARDS";
    return parse_error(fmt::format("{}={} is set but {} is not: set both, or neither", set, n ? n : i, unset));
  }
  auto shard = shard_of(i, n);
  if (!shard) {
    return parse_error(
        fmt::format("GTEST_SHARD_INDEX={} GTEST_TOTAL_SHARDS={}: expected integers with 0 <= index < total", i, n));
  }
  return ShardChoice{shard->first, shard->second, fmt::format("GTEST_SHARD_INDEX={} GTEST_TOTAL_SHARDS={}", i, n)};
}

Expected<std::pair<int, int>> selected_shard(const Selection& s) {
  OPGATE_ASSIGN_OR_RETURN(ShardChoice c, choose_shard(s));
  return std::make_pair(c.index, c.total);
}

std::string shard_header(const Selection& s) {
  auto c = choose_shard(s);
  if (!c || c->total <= 1) return "";
  return fmt::format("shard {}/{} from {}", c->index, c->total, c->source);
}

nlohmann::json scheduler_info(const Selection& s) {
  nlohmann::json j = nlohmann::json::object();
  if (auto c = choose_shard(s); c && !c->source.empty()) j["shard_from"] = c->source;
  nlohmann::json vars = nlohmann::json::object();
  for (const char* name : {"OPGATE_SHARD", "CI_NODE_INDEX", "CI_NODE_TOTAL", "JOB_COMPLETION_INDEX",
                           "OPGATE_SHARD_TOTAL", "GTEST_SHARD_INDEX", "GTEST_TOTAL_SHARDS", "OPGATE_ASCEND_DEVICE",
                           "CTEST_RESOURCE_GROUP_0_NPUS"}) {
    if (const char* v = env(name)) vars[name] = v;
  }
  j["env"] = vars;
  return j;
}

void add_shard_flags(CLI::App* cmd, Selection& sel) {
  cmd->add_option("--shard", sel.shard,
                  "Shard i of N (i/N), by a stable hash of the case id (default: OPGATE_SHARD, GitLab's "
                  "CI_NODE_INDEX/CI_NODE_TOTAL, JOB_COMPLETION_INDEX with --shard-total, GTEST_SHARD_INDEX)");
  cmd->add_option("--shard-total", sel.shard_total,
                  "Number of shards for a 0-based JOB_COMPLETION_INDEX (Kubernetes Indexed Job; or OPGATE_SHARD_TOTAL)")
      ->check(CLI::Range(1, 1000000));
}

Expected<BaselineScope> selection_scope(const Selection& s, const SelectionCounts& counts) {
  OPGATE_ASSIGN_OR_RETURN(std::optional<std::regex> re, filter_regex(s));
  OPGATE_ASSIGN_OR_RETURN(auto shard, selected_shard(s));
  return BaselineScope([op_tiers = counts.op_tiers, re, shard](const CaseResult& b) {
    return op_tiers.count({b.op, b.tier}) && (!re || std::regex_search(b.id, *re)) &&
           in_shard(b.id, shard.first, shard.second);
  });
}

Expected<std::vector<Case>> select_cases(const std::string& root, const Selection& s, SelectionCounts* counts) {
  SelectionCounts local;
  SelectionCounts& k = counts != nullptr ? *counts : local;
  k = SelectionCounts{};
  std::vector<const OpInfo*> ops;  // each operator once, however it was named
  for (const auto& name : s.ops) {
    OPGATE_ASSIGN_OR_RETURN(const OpInfo* op, resolve_op(name));
    if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
  }
  k.files = unique_files(s.files);
  if (s.files.empty()) {
    std::vector<const OpInfo*> file_ops = ops;
    if (file_ops.empty()) {
      for (const auto& op : all_ops()) file_ops.push_back(&op);
    }
    for (const OpInfo* op : file_ops) {
      for (const auto& tier : s.tiers.empty() ? std::vector<std::string>{"ci"} : unique(s.tiers)) {
        const std::string path = fmt::format("{}/cases/{}/{}.json", root, op->stem, tier);
        if (!exists(path)) {
          if (s.tiers.empty()) continue;  // an operator may lack the default tier
          return parse_error(fmt::format("{}: no such case file (tier '{}' of {})", path, tier, op->stem));
        }
        k.files.push_back(path);
      }
    }
  }
  std::unordered_map<std::string, std::string> first_at;  // id -> "<file>: cases[i]"
  std::vector<Case> all;
  for (const auto& file : k.files) {
    OPGATE_ASSIGN_OR_RETURN(auto cases, load_case_file(file));
    for (auto& c : cases) {
      // Ids key reports, baselines and golden folders: one id, one case, across tiers too.
      auto [first, fresh] = first_at.emplace(c.id, fmt::format("{}: cases[{}]", c.source, c.index));
      if (!fresh) return parse_error(fmt::format("{}: duplicate case id (also {})", case_where(c), first->second));
      all.push_back(std::move(c));
    }
  }
  return keep_selected(std::move(all), s, &k);
}

Expected<CaseSelector> CaseSelector::make(const Selection& s) {
  CaseSelector sel;
  for (const auto& name : s.ops) {
    OPGATE_ASSIGN_OR_RETURN(const OpInfo* op, resolve_op(name));
    sel.ops_.push_back(op);
  }
  OPGATE_ASSIGN_OR_RETURN(sel.filter_, filter_regex(s));
  OPGATE_ASSIGN_OR_RETURN(auto shard, selected_shard(s));
  sel.shard_index_ = shard.first;
  sel.shard_total_ = shard.second;
  return sel;
}

bool CaseSelector::keep(const Case& c, SelectionCounts& k) const {
  ++k.loaded;
  if (!ops_.empty() && std::none_of(ops_.begin(), ops_.end(), [&](const OpInfo* op) { return op->stem == c.op; })) {
    return false;
  }
  k.op_tiers.insert({c.op, c.tier});
  if (filter_) {
    bool hit = std::regex_search(c.id, *filter_);
    for (const auto& t : c.tags) hit = hit || std::regex_search(t, *filter_);
    if (!hit) return false;
  }
  ++k.matched;
  return in_shard(c.id, shard_index_, shard_total_);
}

Expected<std::vector<Case>> keep_selected(std::vector<Case> cases, const Selection& s, SelectionCounts* counts) {
  SelectionCounts local;
  SelectionCounts& k = counts != nullptr ? *counts : local;
  OPGATE_ASSIGN_OR_RETURN(CaseSelector selector, CaseSelector::make(s));
  std::vector<Case> out;
  for (auto& c : cases) {
    if (selector.keep(c, k)) out.push_back(std::move(c));
  }
  return out;
}

void add_baseline_flags(CLI::App* cmd, BaselineFlags& f, bool path_is_option) {
  if (path_is_option) {
    cmd->add_option("--baseline", f.path, "Compare with an accepted baseline (a report folder or results.jsonl)");
  } else {
    cmd->add_option("baseline", f.path, "The accepted baseline (a report folder or results.jsonl)")->required();
  }
  cmd->add_flag("--allow-known-failures", f.allow_known_failures,
                "With a baseline: failures it already had (same verdict) do not fail the gate");
  cmd->add_flag("--fail-on-drift", f.fail_on_drift, "With a baseline: accuracy drift fails the gate");
  cmd->add_option("--drift-factor", f.options.drift_factor, "Drift: tolerance use grew by more than this factor")
      ->check(CLI::Range(1.0, 1e6));
  cmd->add_option("--drift-floor", f.options.drift_floor, "Drift: and now exceeds this fraction of the tolerance")
      ->check(CLI::Range(0.0, 1.0));
}

Expected<int> gate_against_baseline(const std::vector<CaseResult>& baseline, const BaselineFlags& f,
                                    const std::string& report_dir, const BaselineScope& scope,
                                    const std::vector<BudgetTrend>* trends) {
  OPGATE_ASSIGN_OR_RETURN(std::vector<CaseResult> current, read_baseline(report_dir));
  // Judging an emu run against a device baseline (or the reverse) is legal but rarely meant.
  OPGATE_ASSIGN_OR_RETURN(std::string mismatch, baseline_config_mismatch(f.path, report_dir));
  if (!mismatch.empty()) fmt::print(stderr, "opgate: warning: {}\n", mismatch);
  const BaselineDiff diff = diff_with_baseline(baseline, current, f.options, scope);
  const std::string text = baseline_text(diff, f.path);
  OPGATE_TRY(write_file_atomic(report_dir + "/baseline.txt", text));
  nlohmann::json j = to_json(diff);
  j["baseline"] = f.path;
  OPGATE_TRY(write_file_atomic(report_dir + "/baseline.json", j.dump(2) + "\n"));
  // report.html again, now with the baseline section (the run wrote it before the comparison).
  OPGATE_TRY(rewrite_report_html(report_dir, current, &diff, f.path, trends));
  std::fputs(text.c_str(), stdout);  // not fmt::print: a closed stdout (`| head`) must not throw the verdict away
  BaselinePolicy policy;
  policy.allow_known_failures = f.allow_known_failures;
  policy.fail_on_drift = f.fail_on_drift;
  policy.strict = f.options.strict;
  return baseline_exit_code(current, diff, policy);
}

// The one-line error of every command: a message that holds line breaks (a library's text, a
// quoted value) is printed on one line and cut to a bounded length, so bad input never floods the
// terminal or splits the error across lines.
int fail(const Status& st) {
  constexpr size_t kMaxErrorChars = 2000;
  std::string text = st.message();
  for (char& ch : text) {
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
  if (text.size() > kMaxErrorChars) text = text.substr(0, kMaxErrorChars) + "...";
  fmt::print(stderr, "opgate: error: {}\n", text);
  return kExitUsage;
}

}  // namespace opgate::cli
