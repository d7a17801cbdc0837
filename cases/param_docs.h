// Each operator's accepted case params, from the one table in its cases/<op>.cpp (ParamDoc):
// what `opgate list --params-of <op>` prints and the marked section of cases/<op>/README.md holds.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cases/param_reader.h"

namespace opgate {

// The table of an operator named by stem, aclnn name or short name; nullptr when unknown.
const std::vector<ParamDoc>* param_docs_of(std::string_view op);

// The table as text: one aligned line per key (name, type, default, meaning), or with `markdown`
// the table the README's generated section holds.
std::string param_docs_text(const std::vector<ParamDoc>& docs, bool markdown);

}  // namespace opgate
