// The error-balance gate; the derivation of its limit is in error_balance.h.
#include "core/error_balance.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace opgate {

ErrorBalance::ErrorBalance(int64_t numel, int64_t width, int64_t cluster)
    : ErrorBalance(numel, width, cluster, 0, numel) {}

ErrorBalance::ErrorBalance(int64_t numel, int64_t width, int64_t cluster, int64_t begin, int64_t end)
    : declared_(cluster > 0),
      unit_(std::max<int64_t>(1, std::min(declared_ ? cluster : width, std::max<int64_t>(1, numel)))),
      begin_(begin),
      column_count_(declared_ ? 0 : static_cast<size_t>(std::max<int64_t>(1, std::min(unit_, end - begin))), 0) {}

void ErrorBalance::close_run() {
  if (run_ < 0) return;
  if (!first_finished_) {
    first_finished_ = true;
    first_run_ = run_;
    first_count_ = run_count_;
  } else {
    run_sq_ += static_cast<uint64_t>(run_count_) * static_cast<uint64_t>(run_count_);
  }
}

void ErrorBalance::add(int64_t flat, int sign, int away) {
  if (sign == 0) return;
  (sign > 0 ? n_pos_ : n_neg_) += 1;
  if (away != 0) (away > 0 ? n_away_ : n_toward_) += 1;
  const int64_t run = flat / unit_;
  if (run != run_) {
    close_run();
    run_ = run;
    run_count_ = 0;
  }
  ++run_count_;
  if (!declared_) ++column_count_[static_cast<size_t>((flat - begin_) % static_cast<int64_t>(column_count_.size()))];
}

void ErrorBalance::absorb(const ErrorBalance& next) {
  n_pos_ += next.n_pos_;
  n_neg_ += next.n_neg_;
  n_away_ += next.n_away_;
  n_toward_ += next.n_toward_;
  if (next.run_ >= 0) {
    // The part's first row (cluster) continues ours when it is the same one.
    const int64_t first_run = next.first_finished_ ? next.first_run_ : next.run_;
    const int64_t first_count = next.first_finished_ ? next.first_count_ : next.run_count_;
    if (first_run == run_) {
      run_count_ += first_count;
    } else {
      close_run();
      run_ = first_run;
      run_count_ = first_count;
    }
    if (next.first_finished_) {
      close_run();
      run_sq_ += next.run_sq_;
      run_ = next.run_;
      run_count_ = next.run_count_;
    }
  }
  if (!declared_) {
    const auto columns = static_cast<int64_t>(column_count_.size());
    int64_t col = next.begin_ % columns;
    for (int64_t c : next.column_count_) {
      column_count_[static_cast<size_t>(col)] += c;
      if (++col == columns) col = 0;
    }
  }
}

ErrorBalance::Verdict ErrorBalance::verdict() const {
  Verdict v;
  v.n_pos = n_pos_;
  v.n_neg = n_neg_;
  v.n_away = n_away_;
  v.n_toward = n_toward_;
  const auto first = static_cast<uint64_t>(first_finished_ ? first_count_ : 0);
  const auto last = static_cast<uint64_t>(run_count_);
  const double runs = static_cast<double>(run_sq_ + first * first + last * last);
  double columns = 0;
  for (int64_t c : column_count_) columns += static_cast<double>(c) * static_cast<double>(c);
  const double n = static_cast<double>(n_pos_ + n_neg_);
  v.limit = kZ * std::sqrt(std::max(runs, columns));
  // |T| <= n for both statistics: a limit at or above n can never be exceeded.
  if (v.limit >= n) v.limit = std::numeric_limits<double>::infinity();
  v.balanced = static_cast<double>(std::llabs(n_pos_ - n_neg_)) <= v.limit &&
               static_cast<double>(std::llabs(n_away_ - n_toward_)) <= v.limit;
  return v;
}

}  // namespace opgate
