#include "cases/param_docs.h"

#include <algorithm>

#include <fmt/format.h>

#include "cases/registry.h"

namespace opgate {

// Each cases/<op>.cpp defines cases::<op>::param_docs() beside its from_json.
#define OPGATE_OP(stem) namespace cases::stem { const std::vector<ParamDoc>& param_docs(); }
#include "opgate/op_list.inc"
#undef OPGATE_OP

const std::vector<ParamDoc>* param_docs_of(std::string_view op) {
  const OpInfo* info = find_op(op);
  if (info == nullptr) return nullptr;
#define OPGATE_OP(s) \
  if (info->stem == #s) return &cases::s::param_docs();
#include "opgate/op_list.inc"
#undef OPGATE_OP
  return nullptr;
}

std::string param_docs_text(const std::vector<ParamDoc>& docs, bool markdown) {
  std::string out;
  if (markdown) {
    out = "| key | type | default | meaning |\n| --- | --- | --- | --- |\n";
    for (const ParamDoc& d : docs) out += fmt::format("| `{}` | {} | {} | {} |\n", d.name, d.type, d.def, d.meaning);
    return out;
  }
  size_t name = 3, type = 4, def = 7;
  for (const ParamDoc& d : docs) {
    name = std::max(name, std::string_view(d.name).size());
    type = std::max(type, std::string_view(d.type).size());
    def = std::max(def, std::string_view(d.def).size());
  }
  out = fmt::format("{:<{}}  {:<{}}  {:<{}}  {}\n", "key", name, "type", type, "default", def, "meaning");
  for (const ParamDoc& d : docs) {
    out += fmt::format("{:<{}}  {:<{}}  {:<{}}  {}\n", d.name, name, d.type, type, d.def, def, d.meaning);
  }
  return out;
}

}  // namespace opgate
