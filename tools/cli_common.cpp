// Case selection and repository lookup for the CLI.
#include "tools/cli_common.h"

#include <sys/stat.h>

#include <cstdlib>
#include <optional>
#include <regex>
#include <tuple>

#include <fmt/format.h>

#include "core/op_registry.h"
#include "core/rng.h"

namespace opgate::cli {
namespace {

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
  std::optional<std::regex> re;
  if (!s.filter.empty()) {
    try {
      re = std::regex(s.filter, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return parse_error(fmt::format("--filter '{}': invalid regular expression: {}", s.filter, e.what()));
    }
  }
  int shard_i = 0, shard_n = 1;
  if (!s.shard.empty()) {
    OPGATE_ASSIGN_OR_RETURN(auto sh, parse_shard(s.shard));
    std::tie(shard_i, shard_n) = sh;
  } else if (const char* n = std::getenv("GTEST_TOTAL_SHARDS"); n != nullptr) {
    const char* i = std::getenv("GTEST_SHARD_INDEX");
    OPGATE_ASSIGN_OR_RETURN(auto sh, parse_shard(fmt::format("{}/{}", i ? i : "", n)));
    std::tie(shard_i, shard_n) = sh;
  }
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

int fail(const Status& st) {
  fmt::print(stderr, "opgate: error: {}\n", st.message());
  return kExitUsage;
}

}  // namespace opgate::cli
