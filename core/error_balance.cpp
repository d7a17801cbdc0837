// The error-balance gate; the derivation of its limit is in error_balance.h.
#include "core/error_balance.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace opgate {

ErrorBalance::ErrorBalance(int64_t numel, int64_t width)
    : width_(std::max<int64_t>(1, std::min(width, std::max<int64_t>(1, numel)))),
      column_count_(static_cast<size_t>(width_), 0) {}

void ErrorBalance::add(int64_t flat, int sign) {
  if (sign == 0) return;
  (sign > 0 ? n_pos_ : n_neg_) += 1;
  const int64_t row = flat / width_;
  if (row != row_) {
    row_sq_ += static_cast<double>(row_count_) * static_cast<double>(row_count_);
    row_ = row;
    row_count_ = 0;
  }
  ++row_count_;
  ++column_count_[static_cast<size_t>(flat % width_)];
}

ErrorBalance::Verdict ErrorBalance::verdict() const {
  Verdict v;
  v.n_pos = n_pos_;
  v.n_neg = n_neg_;
  const double rows = row_sq_ + static_cast<double>(row_count_) * static_cast<double>(row_count_);
  double columns = 0;
  for (int64_t c : column_count_) columns += static_cast<double>(c) * static_cast<double>(c);
  const double n = static_cast<double>(n_pos_ + n_neg_);
  v.limit = kZ * std::sqrt(std::max(rows, columns));
  // |T| <= n: a limit at or above n can never be exceeded.
  if (v.limit >= n) v.limit = std::numeric_limits<double>::infinity();
  v.balanced = std::fabs(static_cast<double>(n_pos_ - n_neg_)) <= v.limit;
  return v;
}

}  // namespace opgate
