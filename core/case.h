// Case records and strict case-file loading (DESIGN.md §5, style-and-layout.md B6). A case file is
// {"op": .., "defaults": {..params..}, "cases": [{id, params, seed, fill, expect, tags, tensors,
// issue, note}]}; unknown keys are errors naming the file, the case and the key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/problem.h"
#include "core/status.h"

namespace opgate {

struct Case {
  std::string id;            // <short op>.<scenario>.<dtype>[.<n>]
  std::string op;            // operator stem
  nlohmann::json params = nlohmann::json::object();   // defaults merged, aclnn names verbatim
  nlohmann::json tensors = nlohmann::json::object();  // descriptor overrides (invalid cases)
  uint64_t seed = 1;
  FillMode fill = FillMode::kRealistic;
  int64_t expect = 0;        // 0 = "ok", else the aclnn error code a correct kernel returns
  std::vector<std::string> tags;
  std::string issue;         // mandatory in regression.json
  std::string note;
  std::string source;        // file it came from ("" for generated or inline cases)
  std::string tier;          // file stem: smoke, ci, nightly, regression, invalid, ...
};

// Loads a whole case file; the op of every case must be known.
Expected<std::vector<Case>> load_case_file(const std::string& path);
// Parses one case object (as in a case file, or a failed/<id>.json), strictly.
Expected<Case> parse_case(const nlohmann::json& j, const std::string& origin,
                          const std::string& file_op, const nlohmann::json& defaults);
// Parses the text of a case file or a single case object (for `opgate repro`).
Expected<std::vector<Case>> parse_cases_text(const std::string& text, const std::string& origin);
// The case as a case file would hold it (every key explicit).
nlohmann::json case_to_json(const Case& c);
// Builds the operator problem for a case (strict params parse + overrides); errors name the case.
Expected<std::unique_ptr<Problem>> make_problem(const Case& c);

}  // namespace opgate
