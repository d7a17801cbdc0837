// The error-balance gate; the derivation of its limit is in error_balance.h.
#include "core/error_balance.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace opgate {

ErrorBalance::ErrorBalance(int64_t numel, int64_t width, int64_t cluster)
    : declared_(cluster > 0),
      unit_(std::max<int64_t>(1, std::min(declared_ ? cluster : width, std::max<int64_t>(1, numel)))),
      column_count_(declared_ ? 0 : static_cast<size_t>(unit_), 0) {}

void ErrorBalance::add(int64_t flat, int sign, int away) {
  if (sign == 0) return;
  (sign > 0 ? n_pos_ : n_neg_) += 1;
  if (away != 0) (away > 0 ? n_away_ : n_toward_) += 1;
  const int64_t run = flat / unit_;
  if (run != run_) {
    run_sq_ += static_cast<double>(run_count_) * static_cast<double>(run_count_);
    run_ = run;
    run_count_ = 0;
  }
  ++run_count_;
  if (!declared_) ++column_count_[static_cast<size_t>(flat % unit_)];
}

ErrorBalance::Verdict ErrorBalance::verdict() const {
  Verdict v;
  v.n_pos = n_pos_;
  v.n_neg = n_neg_;
  v.n_away = n_away_;
  v.n_toward = n_toward_;
  const double runs = run_sq_ + static_cast<double>(run_count_) * static_cast<double>(run_count_);
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
