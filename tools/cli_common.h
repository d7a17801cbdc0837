// Shared pieces of the opgate sub-commands: locating the repository's case and golden folders,
// selecting cases (op, tier, files, filter, shard) and printing errors the one way.
#pragma once

#include <string>
#include <vector>

#include "core/case.h"
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

// Loads and filters the selected cases; errors name the file, case and field.
Expected<std::vector<Case>> select_cases(const std::string& root, const Selection& s);
// Whether a case id belongs to shard i of n (stable hash of the id).
bool in_shard(const std::string& id, int index, int total);

// Prints "opgate: error: <message>" to stderr and returns kExitUsage.
int fail(const Status& st);

}  // namespace opgate::cli
