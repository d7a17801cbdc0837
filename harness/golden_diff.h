// Review of a golden change (golden-format.md: "a change of the reference shows up as a reviewable
// diff"): compares two golden trees case by case and tensor by tensor, and says for each expected
// output how many elements moved, by how much in device ulps, and how many of them round to a
// different device value — the ones a kernel comparison could actually notice. The tolerance files
// of format 2 (magnitudes, slack) are reported apart: they move the allowance, not the expectation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace opgate {

// One changed element as a reviewer reads it: where, old -> new, and how far in ulps.
struct GoldenElementChange {
  std::vector<int64_t> index;  // multi-dimensional, row-major
  double before = 0, after = 0;
  // |after - before| in ulps of the file's device dtype at the larger magnitude (an integer dtype:
  // the difference itself); NaN when either value is not finite.
  double ulps = 0;
};

struct GoldenTensorDiff {
  std::string file;    // "expected/y.npy", "inputs/x.npy", ...
  std::string status;  // "changed", "added", "removed", "reshaped" (dtype or shape differ)
  std::string device_dtype;
  int64_t elements = 0;
  int64_t changed = 0;  // elements whose stored bits differ
  int64_t visible = 0;  // float64 expected values whose device-dtype rounding differs
  double max_abs = 0;   // largest |new - old| over changed finite elements
  double max_ulps = 0;  // the same in ulps of the device dtype at the larger value
  std::vector<GoldenElementChange> first;  // the first changed elements in index order (max_elements)
  // Format 2 tolerance files (expected/<name>.mag.npy, .slack.npy): how the allowance moved.
  bool tolerance = false;
  int64_t grew = 0, shrank = 0;  // elements whose magnitude or slack grew / shrank
  double max_rel = 0;            // largest |new - old| / max(|old|, |new|) over changed finite elements
};

struct GoldenCaseDiff {
  std::string op, id;
  // "identical", "changed", "added", "removed", "unreadable", or "corrupted": a tensor file no
  // longer matches the digest its manifest records (edited by hand, damaged), never a change.
  std::string status;
  std::vector<std::string> notes;  // "reference_version 1 -> 2", "case.json params.H: 32 -> 64", why unreadable
  std::vector<GoldenTensorDiff> tensors;  // only the tensors that differ
  // Whether an input, expected value or care mask differs / whether a tolerance file does.
  bool values_changed() const;
  bool tolerances_changed() const;
};

struct GoldenTreeDiff {
  std::vector<GoldenCaseDiff> cases;  // sorted by op, then id
  int64_t count(const std::string& status) const;
};

// Changed elements listed per tensor by default (`golden diff --max-elements`).
inline constexpr int64_t kDiffElements = 10;
GoldenCaseDiff diff_golden_case(const std::string& old_dir, const std::string& new_dir,
                                int64_t max_elements = kDiffElements);
// Every case folder in either tree (optionally one operator stem).
GoldenTreeDiff diff_golden_trees(const std::string& old_root, const std::string& new_root,
                                 const std::string& stem = "", int64_t max_elements = kDiffElements);
// One counter line, then a block per case that is not identical, each changed tensor with its
// first changed elements ("[1, 2]: 0.5 -> 0.5009765625 (1 ulp of float16)").
std::string golden_diff_text(const GoldenTreeDiff& d, const std::string& old_label, const std::string& new_label);

}  // namespace opgate
