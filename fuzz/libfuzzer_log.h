// Reading libFuzzer's output for `opgate fuzz`: what kind of finding a replay log shows (the
// harness's "==opgate-fuzz== finding" line, else the sanitizer's or libFuzzer's report), and the
// campaign statistics of the logs in a folder. Header-only, like fuzz/fuzz_input.h.
#pragma once

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace opgate::fuzz {

// A file-name-safe kind, e.g. "verdict-failed", "asan-heap-buffer-overflow", "ubsan-tensor-88",
// "check-npy-120", "exception-out-of-range", "timeout"; else the artifact's libFuzzer prefix.
inline std::string finding_kind(const std::string& log, const std::string& artifact) {
  static const std::vector<std::pair<std::regex, std::string>> kRules = {
      {std::regex("==opgate-fuzz== finding ([a-z0-9-]+)"), "$1"},
      {std::regex("internal check failed at (?:[^ :]*/)?([A-Za-z0-9_]+)\\.[a-z]+:([0-9]+)"), "check-$1-$2"},
      {std::regex("([A-Za-z0-9_]+)\\.(?:cpp|cc|hpp|h):([0-9]+):[0-9]+: runtime error"), "ubsan-$1-$2"},
      {std::regex("terminate called after throwing an instance of '(?:[A-Za-z0-9_]+::)*([A-Za-z0-9_]+)'"),
       "exception-$1"},
      {std::regex("ERROR: AddressSanitizer: ([a-z-]+)"), "asan-$1"},
      {std::regex("ERROR: LeakSanitizer"), "leak"},
      {std::regex("ERROR: libFuzzer: (timeout|out-of-memory|deadly signal)"), "$1"}};
  std::smatch m;
  for (const auto& [re, format] : kRules) {
    if (!std::regex_search(log, m, re)) continue;
    std::string kind = m.format(format);
    for (char& c : kind) {
      const auto u = static_cast<unsigned char>(c);
      c = std::isalnum(u) || c == '-' ? static_cast<char>(std::tolower(u)) : '-';
    }
    return kind;
  }
  return artifact.substr(0, artifact.find('-'));
}

struct CampaignStats {
  long execs = 0, exec_per_s = 0, cov = 0, ft = 0, corpus = 0;
};

// Sums executions and rates over the job logs fuzz-<n>.log of `dir` (-jobs; the main fuzz.log repeats
// them) or else fuzz.log, and takes the largest coverage (cov: edges, ft: features) and corpus size.
inline CampaignStats read_stats(const std::filesystem::path& dir) {
  static const std::regex kExecs("stat::number_of_executed_units: *([0-9]+)");
  static const std::regex kRate("stat::average_exec_per_sec: *([0-9]+)");
  static const std::regex kCov("cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+)");
  std::vector<std::filesystem::path> logs;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (std::regex_match(e.path().filename().string(), std::regex("fuzz-[0-9]+\\.log"))) logs.push_back(e.path());
  }
  if (logs.empty()) logs.push_back(dir / "fuzz.log");
  CampaignStats s;
  for (const auto& path : logs) {
    std::ifstream in(path);
    std::stringstream buf;
    buf << in.rdbuf();
    const std::string log = buf.str();
    std::smatch m;
    if (std::regex_search(log, m, kExecs)) s.execs += std::stol(m[1]);
    if (std::regex_search(log, m, kRate)) s.exec_per_s += std::stol(m[1]);
    for (auto it = std::sregex_iterator(log.begin(), log.end(), kCov); it != std::sregex_iterator(); ++it) {
      s.cov = std::max(s.cov, std::stol((*it)[1]));
      s.ft = std::max(s.ft, std::stol((*it)[2]));
      s.corpus = std::max(s.corpus, std::stol((*it)[3]));
    }
  }
  return s;
}

}  // namespace opgate::fuzz
