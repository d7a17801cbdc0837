// Golden files per the binding contract (shared/design/golden-format.md): one folder per case with
// case.json, manifest.json, inputs/<name>.npy (device images) and expected/<name>[.care|.mag|.slack].npy;
// written atomically; read only after every digest checks; verified against the case files and by
// recomputation, with a diagnosis of any mismatch.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/case.h"
#include "core/reference_outputs.h"
#include "core/status.h"

namespace opgate {

// Regen writes format 2 (the tolerance magnitudes and slack travel with the expected values, so a
// run against golden needs no reference); readers accept 1 and 2.
constexpr int kGoldenFormat = 2;
constexpr int kOldestGoldenFormat = 1;

std::string golden_case_dir(const std::string& root, const std::string& stem, const std::string& id);

// Computes the case (fill, pack, reference) and writes its golden folder under `root`, unless the
// folder already holds exactly that (its manifest may name another harness_version): then it is
// left untouched and `*written` (when given) is false.
Status regenerate_golden(const std::string& root, const Case& c, const std::string& harness_version,
                         bool* written = nullptr);

// Deletes the folders under root/<stem> whose case id is not in `keep` (the operator's whole set of
// golden cases) and returns them. Each is renamed to a hidden name before deletion, so an
// interrupted removal never leaves a half-deleted folder that looks like a case.
Expected<std::vector<std::string>> remove_stale_golden(const std::string& root, const std::string& stem,
                                                       const std::set<std::string>& keep);

// What an interrupted regen leaves under root/<stem>: ".<id>.old.<pid>" (the previous folder, moved
// aside just before the new one is renamed in) and ".<id>.tmp.<pid>" (a folder being written).
struct GoldenLeftover {
  std::string path, id;
  bool old = false;  // ".old": the previous folder; else ".tmp"
  long pid = 0;
  bool owner_running = false;  // the regen that made it still runs: leave it alone
};
std::vector<GoldenLeftover> find_golden_leftovers(const std::string& root, const std::string& stem);
// Recovers or removes the leftovers of regens that no longer run: an old folder whose case has no
// folder is moved back (the swap was cut between its two renames), everything else is deleted.
// Returns one line per leftover saying what was done or why it was skipped.
std::vector<std::string> clean_golden_leftovers(const std::string& root, const std::string& stem);
// Entries of a case folder that the format does not have (golden-format.md): anything but
// case.json, manifest.json and inputs/, expected/ holding <name>.npy files, e.g. the temporary
// files of an interrupted write ("<file>.tmp.<pid>.<n>"). Each as "<path>: <why>".
std::vector<std::string> stray_golden_files(const std::string& case_dir);

struct GoldenCase {
  int format = kGoldenFormat;
  nlohmann::json case_json;
  nlohmann::json manifest;
  TensorMap inputs;     // device images, bf16 restored from '<u2'
  TensorMap expected;   // by output name
  TensorMap care;       // by output name, where present
  TensorMap magnitude;  // format 2, by output name: the `bound` magnitudes the reference returned
  TensorMap slack;      // format 2, by output name, where present
  // Format 2 holds everything the comparison needs: a run uses these instead of the reference.
  bool stores_tolerances() const { return format >= 2; }
};
// Fails, naming the file, unless the manifest fits the contract and its folder and every tensor
// file matches its digest: corrupted expected values must never reach a comparison.
Expected<GoldenCase> read_golden(const std::string& case_dir);

// One field where two cases differ: its dotted path ("params.H") and both values as short JSON
// text ("absent" when the field is missing on that side).
struct CaseFieldDiff {
  std::string field, before, after;
};
// Every leaf where two case.json objects differ, in field order. Verify, `run --against golden` and
// diff all use this one rule, so they never disagree about whether a case changed.
std::vector<CaseFieldDiff> case_differences(const nlohmann::json& before, const nlohmann::json& after);
// The one line a run prints (once) when `count` of its golden cases are format 1.
std::string golden_format1_note(size_t count);
// Format 2: why the folder cannot stand in for the reference of `problem` ("" when it can), naming
// the file: an output its compare plan checks with the `bound` standard has no magnitude file, a
// magnitude is not finite where the expected value is (it would accept any value), or an output
// has a slack file, which this comparator has no term for (no reference returns one).
std::string golden_tolerance_problem(const std::string& case_dir, const GoldenCase& g, const Problem& problem,
                                     FillMode fill);

// The case as regeneration writes it to case.json: params as the problem resolves them, so a
// default that changes counts as a change of the case.
nlohmann::json golden_case_json(const Case& c, const Problem& problem);

// Why stored golden values and freshly computed ones differ ("" when they agree): shape, or the
// first element that differs by more than a few double ulps (libm may differ in the last bit).
std::string golden_values_differ(const Tensor& golden, const Tensor& fresh);

struct GoldenCheck {
  std::string dir;
  bool ok = true;
  // "" when ok, else the most basic of "unreadable", "file corrupted", "case removed",
  // "case changed", "input generator changed", "reference changed".
  std::string cause;
  std::vector<std::string> causes;  // every cause found, most basic first
  std::vector<std::string> details;
};
// Checks the folder and its digests, compares its case.json with the case of that id in
// `current` (the cases golden folders are made from: smoke and regression), then regenerates the
// inputs from the seed and recomputes the reference.
GoldenCheck verify_golden(const std::string& case_dir, const std::vector<Case>& current);
// Every case folder under root (optionally one operator), sorted.
std::vector<std::string> list_golden_dirs(const std::string& root, const std::string& stem = "");

}  // namespace opgate
