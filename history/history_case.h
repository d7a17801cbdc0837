// What the run history records of one case: the history's own input, independent of how the
// runner's CaseResult stores its outputs (history_from_result.cpp is the one place that reads it).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace opgate::history {

struct HistoryOutput {
  std::string name;
  std::string check;  // the check kind as reports name it: exact, bound, quantized, undefined, ...
  bool passed = true;
  double budget_used = 0;  // worst |error| / allowance (1 = at the tolerance); NaN when not measured
  std::map<std::string, double> metrics;  // the scalar metrics of results.jsonl (max_abs, rmse, ...)
};

struct HistoryCase {
  std::string id;
  std::string op;
  std::string tier;
  std::string verdict;  // verdict_name(): PASSED, FAILED, ...
  std::string reason;
  double duration_ms = 0;
  std::vector<HistoryOutput> outputs;
};

}  // namespace opgate::history
