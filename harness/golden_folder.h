// The golden folder on disk, shared by regeneration, reading and verification (golden-format.md):
// what a folder holds, computed from its case, and a folder loaded with every contract check.
// Internal to harness/golden*.cpp.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/case.h"
#include "core/compare.h"
#include "core/reference_outputs.h"
#include "core/status.h"
#include "core/tensor.h"

namespace opgate::golden_folder {

// One file of a golden folder: its path below the folder, its bytes and (for tensors) its manifest entry.
struct TensorFile {
  std::string rel;  // "inputs/gradY.npy"
  std::string bytes;
  nlohmann::json meta;
};

// case.json, manifest.json and every tensor file of a case, ready to write or to compare.
struct Computed {
  nlohmann::json case_json;
  std::vector<TensorFile> files;
};

// "expected/<name>.mag.npy" / "expected/<name>.slack.npy": the tolerance files of format 2, and the
// output they belong to ("" for any other file).
std::string tolerance_output(const std::string& rel);

// A tolerance (magnitude or slack) that accepts any value of an element: not finite where the
// expected value, rounded to the output's dtype, is finite and compared. (Where it overflows, the
// comparison accepts the matching infinity alone, whatever the allowance.) Regen refuses to store
// one, verify names it and a run against golden refuses it; each such message holds
// kUnsoundTolerance.
inline constexpr char kUnsoundTolerance[] = "a non-finite tolerance for a finite expected value";
struct UnsoundTolerance {
  std::string output;
  std::string file;  // "expected/y.mag.npy"
  std::string what;  // "element [2, 0] holds inf where the expected value is 65504"
};
// The first such element of the first output of `plan` that has one (outputs in plan order;
// magnitudes before slack).
std::optional<UnsoundTolerance> unsound_tolerance(const ComparePlan& plan, const RefOutputs& ref);
// The expected values, care masks and tolerances a loaded folder stores, by output name.
RefOutputs stored_outputs(const std::map<std::string, Tensor>& tensors);

// The case's inputs after every check a golden case must pass (parse, size, validate, fill, data
// checks); errors name the file and the case. Regen runs it on every case before writing any.
Expected<TensorMap> checked_inputs(const Case& c);
// Everything a golden folder holds, computed from the case; an error naming the operator, case,
// output and element when a tolerance it would store is not finite for a finite expected value.
Expected<Computed> compute(const Case& c, const std::string& harness_version);
// The same from what the case computed: the packed inputs and the reference's outputs. Format 2:
// each output's magnitude (zeros for a `bound` output the reference gives none, which the
// comparison reads as 0 too) and slack, next to its expected values.
Computed folder_files(const Case& c, const Problem& problem, const TensorMap& packed, const RefOutputs& ref,
                      const std::string& harness_version);
// Writes `computed` as the folder of case `c` under `root`, atomically (the case is either the old
// or the new folder, never half-written).
Status install_folder(const std::string& root, const Case& c, const Computed& computed);

// A golden folder as read from disk. `problems` (each naming its file) say why it cannot be
// trusted: the manifest breaks the contract or disagrees with its folder, or a tensor file is
// missing, unlisted, undecodable or differs from its digest. read_golden and verify_golden both
// read folders only through this.
struct LoadedFolder {
  std::string case_text;
  nlohmann::json manifest;
  std::map<std::string, Tensor> tensors;  // by "inputs/x.npy", decoded after the digest check
  std::vector<std::string> problems;
};

LoadedFolder load_folder(const std::string& dir);

std::string sha256_hex(const std::string& bytes);
// The SHA-256 of a file read in chunks; an error when it holds more than `limit` bytes.
Expected<std::string> sha256_file(const std::string& path, uint64_t limit);
bool is_dir(const std::string& path);
bool is_link(const std::string& path);  // a symbolic link itself (lstat), whatever it points to
// Removes a folder tree (or a file, or a link) without following any symbolic link.
void remove_tree(const std::string& path);
// The last path component and its parent ("a/b/c/" -> "c", "a/b").
std::string last_part(std::string path);
std::string parent_of(std::string path);

}  // namespace opgate::golden_folder
