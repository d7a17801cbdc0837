// The operator registry, expanded from the op list generated out of OPGATE_OPS.
#include <fmt/format.h>

#include "core/op_registry.h"
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

}  // namespace opgate
