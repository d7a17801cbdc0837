#include "tools/run_parallel.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <system_error>

#include "core/child_process.h"
#include "harness/runner.h"

namespace opgate::cli {

std::vector<size_t> start_order(const std::vector<double>& weights) {
  std::vector<size_t> order(weights.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return weights[a] > weights[b]; });
  return order;
}

int64_t child_threads(int64_t budget, int jobs, size_t not_started) {
  const auto busy = static_cast<int64_t>(std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(jobs, 1)), not_started)));
  return std::max<int64_t>(1, budget / busy);
}

ParallelCases::ParallelCases(const std::vector<PreparedCase>& cases, const std::vector<double>& weights,
                             const std::vector<Backend*>& backends, const RunOptions& opt,
                             const std::set<std::string>& done, int jobs, int64_t thread_budget,
                             std::function<void(size_t, const CaseResult&)> on_finished)
    : cases_(cases),
      order_(start_order(weights)),
      opt_(opt),
      done_(done),
      jobs_(jobs),
      thread_budget_(thread_budget),
      on_finished_(std::move(on_finished)),
      results_(cases.size()) {
  for (int w = 0; w < jobs; ++w) {
    Backend& backend = *backends[backends.size() == 1 ? 0 : static_cast<size_t>(w)];
    // A worker the system refuses (a thread limit) leaves its cases to those that started; with
    // none started, this thread runs them all before the first take().
    try {
      workers_.emplace_back([this, &backend] { work(backend); });
    } catch (const std::system_error& e) {
      std::fprintf(stderr, "opgate: warning: %zu of %d case workers started (%s)\n", workers_.size(), jobs, e.what());
      if (workers_.empty()) work(backend);
      break;
    }
  }
}

ParallelCases::~ParallelCases() {
  stop_ = true;
  for (auto& t : workers_) t.join();
}

void ParallelCases::work(Backend& backend) {
  for (size_t started = next_++; started < order_.size(); started = next_++) {
    const size_t k = order_[started];
    std::optional<CaseResult> r;
    if (!stop_ && stop_signal() == 0 && !done_.count(cases_[k].c.id)) {
      RunOptions opt = opt_;
      opt.child_threads = child_threads(thread_budget_, jobs_, order_.size() - started);
      r = run_case_isolated(cases_[k], backend, opt);
      // A child killed by the stop has no verdict: nothing is reported for it.
      if (stop_signal() == 0 && on_finished_) on_finished_(k, *r);
    }
    const std::lock_guard<std::mutex> lock(mu_);
    results_[k] = Slot{true, std::move(r)};
    ready_.notify_all();
  }
}

std::optional<CaseResult> ParallelCases::take(size_t k) {
  std::unique_lock<std::mutex> lock(mu_);
  ready_.wait(lock, [&] { return results_[k].filled; });
  return std::move(results_[k].result);
}

}  // namespace opgate::cli
