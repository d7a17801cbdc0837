// The operator registry (one OpInfo per stem in OPGATE_OPS, from the generated op list) and what
// needs it: case files whose operator names are resolved, and a case's problem.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/case.h"
#include "core/op_registry.h"
#include "core/problem.h"
#include "core/status.h"

namespace opgate {

const std::vector<OpInfo>& all_ops();
// By stem, aclnn name or short name; nullptr if unknown.
const OpInfo* find_op(std::string_view name);
// "a, b, c" of the known stems, for error messages.
std::string known_ops_text();
// The registry as core's case loading takes it.
const OpNames& op_names();

// core/case.h's loaders with the registry's operator names.
Expected<std::vector<Case>> load_case_file(const std::string& path);
Expected<Case> parse_case(const nlohmann::json& j, const std::string& origin, const std::string& file_op,
                          const nlohmann::json& defaults);
Expected<std::vector<Case>> parse_cases_text(const std::string& text, const std::string& origin);
// The problem of a case's operator (core/case.h make_problem); an unknown op names the case.
Expected<std::unique_ptr<Problem>> make_problem(const Case& c);

}  // namespace opgate
