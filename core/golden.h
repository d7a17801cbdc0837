// Golden files per the binding contract (shared/design/golden-format.md): one folder per case with
// case.json, manifest.json, inputs/<name>.npy (device images) and expected/<name>[.care].npy;
// written atomically; verified by recomputation with a diagnosis of any mismatch.
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
Expected<GoldenCase> read_golden(const std::string& case_dir);

struct GoldenCheck {
  std::string dir;
  bool ok = true;
  // "" when ok, else one of "file corrupted", "input generator changed", "reference changed",
  // "unreadable".
  std::string cause;
  std::vector<std::string> details;
};
// Checks digests, regenerates the inputs from the seed and recomputes the reference.
GoldenCheck verify_golden(const std::string& case_dir);
// Every case folder under root (optionally one operator), sorted.
std::vector<std::string> list_golden_dirs(const std::string& root, const std::string& stem = "");

}  // namespace opgate
