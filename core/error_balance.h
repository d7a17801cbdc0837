// The error-balance gate (误差均衡性): a correct kernel's errors beyond its own final rounding fall
// on both sides of the reference; a truncating or mis-rounded intermediate pushes them one way.
#pragma once

#include <cstdint>
#include <vector>

namespace opgate {

// Counts the direction of each nonzero error of one output (against the correctly rounded
// reference) and decides whether the imbalance is beyond chance. Two directions are counted:
//   signed:    +1 above, -1 below the reference (a kernel rounding toward -inf somewhere);
//   magnitude: +1 away from zero, -1 toward zero (a truncating intermediate: on outputs of both
//              signs its signed errors cancel, since it shrinks positive and negative values alike).
// The magnitude direction is left out where the rounded reference is 0 (it has no sign there).
//
// Derivation (false-alarm probability per output <= kFalseAlarm): under a correct kernel the
// elements that leave the correctly rounded reference do so because the kernel's accumulated error
// crossed a rounding boundary, and that error is as likely to be positive as negative, whatever the
// sign of the value. Errors may be correlated inside a cluster of elements that share intermediate
// results (an attention head's D outputs share one softmax max, denominator and rounded P), but
// clusters are independent. T = sum_j S_j is then a sum of independent, symmetric cluster sums with
// |S_j| <= c_j (the cluster's count of nonzero errors), for either direction, so Hoeffding gives
//   P(|T| >= t) <= 2 exp(-t^2 / (2 sum_j c_j^2)).
// Two statistics share kFalseAlarm (union bound, 5e-10 each): t = z sqrt(sum_j c_j^2),
// z = sqrt(2 ln(4e9)) = 6.650.
//
// The clusters: a compare plan that knows the correlated unit declares it (`cluster`: that many
// consecutive elements in the output's canonical layout, e.g. one attention head). Otherwise the
// output is taken as rows of `width` contiguous elements, errors may be correlated inside a row
// (a MoE token row shares its rounded hidden activations) or inside a column (rows share weights and
// per-channel scales) but not along both axes at once, and the gate uses the larger of the row and
// the column sums, so the bound holds under either. Since |T| <= N (the nonzero errors) and a sum
// over m clusters is at least N^2 / m, an output can fail only with more than z^2 = 44.2 nonzero
// errors in at least 45 clusters (45 rows and 45 columns without a declared cluster). Elements
// whose reference sits exactly on a rounding boundary (a tie) are left out by the caller: there the
// reference's own rounding picks a side, so a correct kernel's crossings all go the other way.
class ErrorBalance {
 public:
  static constexpr double kFalseAlarm = 1e-9;
  static constexpr double kZ = 6.650;  // sqrt(2 ln(2 * 2 / kFalseAlarm)) = 6.6498, rounded up

  // `numel` elements in rows of `width` (the output's last dimension; the whole output when it is
  // 1-D); with `cluster` > 0, the clusters are runs of `cluster` consecutive elements instead.
  ErrorBalance(int64_t numel, int64_t width, int64_t cluster = 0);
  // The counts of the elements [begin, end) only, for a pass split into blocks: each block counts
  // its own part, and the parts are absorbed in element order into the whole output's gate.
  ErrorBalance(int64_t numel, int64_t width, int64_t cluster, int64_t begin, int64_t end);
  // Element `flat` erred upward (sign > 0) or downward (sign < 0); `away` > 0 when that moved it
  // away from zero, < 0 toward zero, 0 when the rounded reference is 0. Called in increasing `flat`.
  void add(int64_t flat, int sign, int away);
  // Adds a part (same numel, width and cluster) whose elements all follow the ones counted so far;
  // this gate must cover the output from element 0. Counts are integers, so the verdict is the
  // one of adding every element here in order.
  void absorb(const ErrorBalance& next);

  struct Verdict {
    int64_t n_pos = 0, n_neg = 0;      // signed direction
    int64_t n_away = 0, n_toward = 0;  // magnitude direction
    double limit = 0;  // |n_pos - n_neg| or |n_away - n_toward| above this fails; +inf when none could
    bool balanced = true;
  };
  Verdict verdict() const;

 private:
  void close_run();  // the current row (cluster) is finished

  bool declared_;  // clusters of `unit_` consecutive elements; else rows of `unit_` and columns
  int64_t unit_;
  int64_t begin_;  // first element of the part counted here (0 for a whole output)
  int64_t n_pos_ = 0, n_neg_ = 0, n_away_ = 0, n_toward_ = 0;
  // Rows (clusters) with an error, in order: the first one's count kept apart once it is finished
  // (a part's first row may continue the previous part's last), the current one, and the sum of
  // c^2 over the finished ones in between (exact in integers).
  int64_t first_run_ = -1, first_count_ = 0;
  bool first_finished_ = false;
  int64_t run_ = -1, run_count_ = 0;
  uint64_t run_sq_ = 0;
  // c_col per column (rows and columns only); column (begin_ + k) % unit_ at k, for as many
  // columns as the part reaches.
  std::vector<int64_t> column_count_;
};

}  // namespace opgate
