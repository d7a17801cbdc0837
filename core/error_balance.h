// The error-balance gate (误差均衡性): a correct kernel's errors beyond its own final rounding fall
// on both sides of the reference; a truncating or mis-rounded intermediate pushes them one way.
#pragma once

#include <cstdint>
#include <vector>

namespace opgate {

// Counts, for the elements of one output laid out as rows of `width` contiguous elements, the
// direction of each nonzero error (+1 above, -1 below the correctly rounded reference) per row
// and per column, and decides whether the imbalance is beyond chance.
//
// Derivation (false-alarm probability per output <= kFalseAlarm): under a correct kernel the
// elements that leave the correctly rounded reference do so because the kernel's accumulated error
// crossed a rounding boundary, and that error is as likely to be positive as negative. Errors are
// correlated inside a row (an attention row's D outputs share one softmax max and denominator;
// a MoE token row shares its rounded hidden activations) or inside a column (rows share weights
// and per-channel scales), but not along both axes at once. Take the clusters to be whichever axis
// is independent: T = n_pos - n_neg is a sum of independent, symmetric cluster sums S_j with
// |S_j| <= c_j (the cluster's count of nonzero errors), so Hoeffding gives
//   P(|T| >= t) <= 2 exp(-t^2 / (2 sum_j c_j^2)).
// Setting that to 1e-9: t = z sqrt(sum_j c_j^2), z = sqrt(2 ln(2e9)) = 6.546. Not knowing which
// axis is the independent one, the gate uses the larger of the row and the column sums, so the
// bound holds under either. Since |T| <= N (the nonzero errors) and each axis sum is at least
// N^2 / (its number of clusters), an output can fail only with more than z^2 = 42.8 nonzero errors
// and at least 43 rows and 43 columns. Elements whose reference sits exactly on a rounding boundary
// (a tie) are left out: there the reference's own rounding picks a side, so a correct kernel's
// crossings all go the other way.
class ErrorBalance {
 public:
  static constexpr double kFalseAlarm = 1e-9;
  static constexpr double kZ = 6.546;  // sqrt(2 ln(2 / kFalseAlarm)), rounded up

  // `numel` elements in rows of `width` (the output's last dimension; the whole output when it is 1-D).
  ErrorBalance(int64_t numel, int64_t width);
  // Element `flat` erred upward (sign > 0) or downward (sign < 0). Called in increasing `flat`.
  void add(int64_t flat, int sign);

  struct Verdict {
    int64_t n_pos = 0, n_neg = 0;
    double limit = 0;  // |n_pos - n_neg| above this fails; +inf when no imbalance could
    bool balanced = true;
  };
  Verdict verdict() const;

 private:
  int64_t width_;
  int64_t n_pos_ = 0, n_neg_ = 0;
  int64_t row_ = -1, row_count_ = 0;
  double row_sq_ = 0;                 // sum over finished rows of c_row^2
  std::vector<int64_t> column_count_;  // c_col per column
};

}  // namespace opgate
