// Golden files per the binding contract (shared/design/golden-format.md): one folder per case with
// case.json, manifest.json, inputs/<name>.npy (device images) and expected/<name>[.care].npy;
// written atomically; read only after every digest checks; verified against the case files and by
// recomputation, with a diagnosis of any mismatch.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/case.h"
#include "core/reference_outputs.h"
#include "core/status.h"

namespace opgate {

constexpr int kGoldenFormat = 1;

std::string golden_case_dir(const std::string& root, const std::string& stem, const std::string& id);

// Computes the case (fill, pack, reference) and writes its golden folder under `root`.
Status regenerate_golden(const std::string& root, const Case& c, const std::string& harness_version);

struct GoldenCase {
  nlohmann::json case_json;
  nlohmann::json manifest;
  TensorMap inputs;    // device images, bf16 restored from '<u2'
  TensorMap expected;  // by output name
  TensorMap care;      // by output name, where present
};
// Fails, naming the file, unless the manifest fits the contract and its folder and every tensor
// file matches its digest: corrupted expected values must never reach a comparison.
Expected<GoldenCase> read_golden(const std::string& case_dir);

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
