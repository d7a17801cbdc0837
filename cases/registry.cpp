// The operator registry, expanded from the op list generated out of OPGATE_OPS.
#include "cases/registry.h"

#include <fmt/format.h>

// Each operator's cases header declares `const OpInfo& cases::<stem>::op_info()`.
#include "opgate/cases_headers.inc"

namespace opgate {

const std::vector<OpInfo>& all_ops() {
  static const std::vector<OpInfo> ops = {
#define OPGATE_OP(stem) cases::stem::op_info(),
#include "opgate/op_list.inc"
#undef OPGATE_OP
  };
  return ops;
}

const OpInfo* find_op(std::string_view name) {
  for (const OpInfo& op : all_ops()) {
    if (name == op.stem || name == op.aclnn_name || name == op.short_name ||
        name == "aclnn" + op.aclnn_name) {
      return &op;
    }
  }
  return nullptr;
}

std::string known_ops_text() {
  std::string s;
  for (const OpInfo& op : all_ops()) s += (s.empty() ? "" : ", ") + op.stem;
  return s;
}

const OpNames& op_names() {
  static const OpNames names{find_op, known_ops_text};
  return names;
}

Expected<std::vector<Case>> load_case_file(const std::string& path) { return load_case_file(path, op_names()); }

Expected<Case> parse_case(const nlohmann::json& j, const std::string& origin, const std::string& file_op,
                          const nlohmann::json& defaults) {
  return parse_case(j, origin, file_op, defaults, op_names());
}

Expected<std::vector<Case>> parse_cases_text(const std::string& text, const std::string& origin) {
  return parse_cases_text(text, origin, op_names());
}

Expected<std::unique_ptr<Problem>> make_problem(const Case& c) {
  const OpInfo* info = find_op(c.op);
  if (info == nullptr) {
    return parse_error(
        fmt::format("{}: field 'op': unknown operator '{}' (known: {})", case_where(c), c.op, known_ops_text()));
  }
  return make_problem(*info, c);
}

}  // namespace opgate
