// Case records and strict case-file loading (DESIGN.md §5, style-and-layout.md B6). A case file is
// {"op": .., "defaults": {..params..}, "cases": [{id, params, seed, fill, expect, tags, tensors,
// issue, note}]}; unknown keys are errors naming the file, the case and the key.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/op_registry.h"
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
  int index = -1;            // position in the file's "cases" array (-1: a single case object)
  // Params keys the case took from the file's "defaults"; errors name them defaults.<key>.
  std::vector<std::string> default_keys;
  std::string tier;          // file stem: smoke, ci, nightly, regression, invalid, ...
};

// Ids become file and folder names (failed/<id>.json, golden/<op>/<id>/), so they are checked at
// load: letters, digits, '_', '-' and '.', not starting with '.' or '-', no "..", at most 200 chars.
Status check_case_id(const std::string& id);
// "<file>: cases[<i>]: case '<id>'", the prefix of every error about a loaded case.
std::string case_where(const Case& c);
// The fill a case's compare plan may rely on. An exact fill promises exact accumulations for the
// values it generates only: a value override (tensors.<name>.fill) voids the promise (2^24 + 1 -
// 2^24 is 0 in fp32, 1 in double), so the plan of such a case is made as for a realistic fill.
FillMode plan_fill(const Case& c);
// How case loading resolves operator names. Core knows no operator: the registry's layer passes
// its lookup (cases/registry.h, which also has the overloads below without this argument).
struct OpNames {
  std::function<const OpInfo*(std::string_view)> find;  // stem, aclnn or short name; nullptr if unknown
  std::function<std::string()> known;                   // "a, b, c" of the stems, for errors
};
// Loads a whole case file; the op of every case must be known.
Expected<std::vector<Case>> load_case_file(const std::string& path, const OpNames& ops);
// Parses one case object (as in a case file, or a failed/<id>.json), strictly.
Expected<Case> parse_case(const nlohmann::json& j, const std::string& origin, const std::string& file_op,
                          const nlohmann::json& defaults, const OpNames& ops);
// Parses the text of a case file or a single case object (for `opgate repro`).
Expected<std::vector<Case>> parse_cases_text(const std::string& text, const std::string& origin,
                                             const OpNames& ops);
// The case as a case file would hold it (every key explicit).
nlohmann::json case_to_json(const Case& c);
// Builds the problem of `op` for a case (strict params parse + overrides); errors name the case.
// A valid call whose tensors need more than max_case_bytes() is refused here (kInvalidCase), the
// one place every entry point passes before filling, so no command ever attempts the allocation.
Expected<std::unique_ptr<Problem>> make_problem(const OpInfo& op, const Case& c);

// Host memory a case may need, --max-case-bytes. Default: a quarter of physical memory, so one
// case (or one case child of a run) can never push the machine into swap or the OOM killer, while
// every nightly case (the largest take a few hundred MB) fits on any machine with 4 GB or more.
uint64_t default_max_case_bytes();
uint64_t max_case_bytes();
void set_max_case_bytes(uint64_t bytes);
// Bytes a case needs, saturating at UINT64_MAX: for every tensor of the call, its device image three
// times (canonical input, packed image and pristine copy; output buffer, guards and unpacked copy)
// plus 16 bytes per element for the double-precision reference (value and magnitude). Reference
// intermediates are smaller than these for every operator here (they scale with the tensors).
uint64_t case_bytes(const Problem& problem);
// "1.5 GiB", for messages.
std::string bytes_text(uint64_t bytes);

}  // namespace opgate
