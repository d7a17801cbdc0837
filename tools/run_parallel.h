// `run -j N`: N workers run the cases at once, each case in its own isolated child, and hand the
// results back by case index; the caller takes them in case order, so the reports, summary,
// junit and exit code are those of a serial run. Workers start the heaviest cases first (longest
// processing time first: the night does not end with one big case running alone) and give each
// child a share of the thread budget that grows as fewer cases are left to start.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/backend.h"
#include "core/result.h"
#include "harness/prepare.h"

namespace opgate::cli {

// Case indices, heaviest first; equal weights keep case order.
std::vector<size_t> start_order(const std::vector<double>& weights);

// Threads of a case child started while `not_started` cases (this one included) wait: the
// budget shared among the workers that can still be busy, at least 1.
int64_t child_threads(int64_t budget, int jobs, size_t not_started);

class ParallelCases {
 public:
  // `backends`: one per worker (ascend --devices: worker w drives NPU w) or a single one that all
  // workers share (emu, fault: the backend only runs in the forked children). `on_finished` is
  // called from a worker as soon as case k has a result (for the progress line).
  ParallelCases(const std::vector<PreparedCase>& cases, const std::vector<double>& weights,
                const std::vector<Backend*>& backends, const RunOptions& opt, const std::set<std::string>& done,
                int jobs, int64_t thread_budget, std::function<void(size_t, const CaseResult&)> on_finished);
  ~ParallelCases();
  ParallelCases(const ParallelCases&) = delete;
  ParallelCases& operator=(const ParallelCases&) = delete;

  // Case k's result once its worker has it; nullopt when it was not run (done, or stopped).
  std::optional<CaseResult> take(size_t k);
  void stop() { stop_ = true; }

 private:
  void work(Backend& backend);

  struct Slot {
    bool filled = false;
    std::optional<CaseResult> result;
  };
  const std::vector<PreparedCase>& cases_;
  const std::vector<size_t> order_;
  const RunOptions& opt_;
  const std::set<std::string>& done_;
  const int jobs_;
  const int64_t thread_budget_;
  const std::function<void(size_t, const CaseResult&)> on_finished_;
  std::vector<Slot> results_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable ready_;
  std::vector<std::thread> workers_;
};

}  // namespace opgate::cli
