// What one operator contributes to the ascend backend (style-and-layout.md B5): its aclnn entry
// points, the documentation's SoC support table, and the marshalling of its arguments. Everything
// else (device memory, guards, workspace, launch, synchronisation, copies, errors) is shared.
#pragma once

#include <string>
#include <vector>

#include "core/backend.h"
#include "device/ascend/acl_abi.h"
#include "device/ascend/ascend_soc.h"

namespace opgate::ascend {

class CallArgs;

struct AscendOp {
  // aclnn names in order of preference, each with its "<name>GetWorkspaceSize" first phase; the
  // first whose two symbols the operator libraries export is used (MoeFFN: aclnnMoeFFN, aclnnFFN).
  std::vector<std::string> entries;
  // The documentation's support verdict for this SoC and resolved entry point (a SKIPPED reason
  // when not supported); also consulted before a rejection probe.
  Support (*supports)(const Problem& problem, const SocInfo& soc, const std::string& entry);
  // Builds every argument through `args` and calls the first phase of args.entry() with
  // args.get_workspace_size<Fn>(...). Returns its status.
  aclnnStatus (*get_workspace_size)(const Problem& problem, CallArgs& args);
};

}  // namespace opgate::ascend
