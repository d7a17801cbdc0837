// Case selection and repository lookup for the CLI.
#include "tools/cli_common.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <regex>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "core/npy.h"
#include "core/op_registry.h"
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

Expected<std::pair<int, int>> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    size_t used = 0;
    const int i = std::stoi(text.substr(0, slash), &used);
    const int n = std::stoi(text.substr(slash + 1));
    if (used != slash || n <= 0 || i < 0 || i >= n) throw std::invalid_argument("range");
    return std::make_pair(i, n);
  } catch (const std::exception&) {
    return parse_error(fmt::format("--shard '{}': expected i/N with 0 <= i < N", text));
  }
}

}  // namespace

std::string repo_root(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (exists("cases") && exists("CMakeLists.txt")) return ".";
  return OPGATE_SOURCE_DIR;
}

bool in_shard(const std::string& id, int index, int total) {
  return total <= 1 || static_cast<int>(fnv1a64(id) % static_cast<uint64_t>(total)) == index;
}

Expected<std::pair<int, int>> selected_shard(const Selection& s) {
  if (!s.shard.empty()) return parse_shard(s.shard);
  if (const char* n = std::getenv("GTEST_TOTAL_SHARDS"); n != nullptr) {
    const char* i = std::getenv("GTEST_SHARD_INDEX");
    return parse_shard(fmt::format("{}/{}", i ? i : "", n));
  }
  return std::make_pair(0, 1);
}

Expected<BaselineScope> selection_scope(const Selection& s) {
  std::set<std::string> ops, tiers;
  for (const auto& name : s.ops) {
    const OpInfo* op = find_op(name);
    if (op == nullptr) return parse_error(fmt::format("--op '{}': unknown operator (known: {})", name, known_ops_text()));
    ops.insert(op->stem);
  }
  for (const auto& file : s.files) tiers.insert(std::filesystem::path(file).stem().string());
  if (s.files.empty()) tiers = s.tiers.empty() ? std::set<std::string>{"ci"} : std::set<std::string>(s.tiers.begin(), s.tiers.end());
  OPGATE_ASSIGN_OR_RETURN(std::optional<std::regex> re, filter_regex(s));
  OPGATE_ASSIGN_OR_RETURN(auto shard, selected_shard(s));
  return BaselineScope([ops, tiers, re, shard](const CaseResult& b) {
    return (ops.empty() || ops.count(b.op)) && tiers.count(b.tier) && (!re || std::regex_search(b.id, *re)) &&
           in_shard(b.id, shard.first, shard.second);
  });
}

Expected<std::vector<Case>> select_cases(const std::string& root, const Selection& s) {
  std::vector<std::string> files = s.files;
  if (files.empty()) {
    std::vector<const OpInfo*> ops;
    for (const auto& name : s.ops) {
      const OpInfo* op = find_op(name);
      if (op == nullptr) {
        return parse_error(fmt::format("--op '{}': unknown operator (known: {})", name, known_ops_text()));
      }
      ops.push_back(op);
    }
    if (ops.empty()) {
      for (const auto& op : all_ops()) ops.push_back(&op);
    }
    const std::vector<std::string> tiers = s.tiers.empty() ? std::vector<std::string>{"ci"} : s.tiers;
    for (const OpInfo* op : ops) {
      for (const auto& tier : tiers) {
        const std::string path = fmt::format("{}/cases/{}/{}.json", root, op->stem, tier);
        if (!exists(path)) {
          if (s.tiers.empty()) continue;  // an operator may lack the default tier
          return parse_error(fmt::format("{}: no such case file (tier '{}' of {})", path, tier, op->stem));
        }
        files.push_back(path);
      }
    }
  }
  OPGATE_ASSIGN_OR_RETURN(std::optional<std::regex> re, filter_regex(s));
  OPGATE_ASSIGN_OR_RETURN(auto shard, selected_shard(s));
  const auto [shard_i, shard_n] = shard;
  std::vector<Case> out;
  for (const auto& file : files) {
    OPGATE_ASSIGN_OR_RETURN(auto cases, load_case_file(file));
    for (auto& c : cases) {
      if (!s.files.empty() && !s.ops.empty()) {
        bool wanted = false;
        for (const auto& name : s.ops) wanted = wanted || (find_op(name) && find_op(name)->stem == c.op);
        if (!wanted) continue;
      }
      if (re) {
        bool hit = std::regex_search(c.id, *re);
        for (const auto& t : c.tags) hit = hit || std::regex_search(t, *re);
        if (!hit) continue;
      }
      if (!in_shard(c.id, shard_i, shard_n)) continue;
      out.push_back(std::move(c));
    }
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
                                    const std::string& report_dir, const BaselineScope& scope) {
  OPGATE_ASSIGN_OR_RETURN(std::vector<CaseResult> current, read_baseline(report_dir));
  const BaselineDiff diff = diff_with_baseline(baseline, current, f.options, scope);
  const std::string text = baseline_text(diff, f.path);
  OPGATE_TRY(write_file_atomic(report_dir + "/baseline.txt", text));
  nlohmann::json j = to_json(diff);
  j["baseline"] = f.path;
  OPGATE_TRY(write_file_atomic(report_dir + "/baseline.json", j.dump(2) + "\n"));
  fmt::print("{}", text);
  BaselinePolicy policy;
  policy.allow_known_failures = f.allow_known_failures;
  policy.fail_on_drift = f.fail_on_drift;
  policy.strict = f.options.strict;
  return baseline_exit_code(current, diff, policy);
}

int fail(const Status& st) {
  fmt::print(stderr, "opgate: error: {}\n", st.message());
  return kExitUsage;
}

}  // namespace opgate::cli
