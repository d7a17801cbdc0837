// What the registry records of one operator (OpInfo). The registry itself (all_ops, find_op) is
// cases/registry.h, filled from the generated op list: core names no operator.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/problem.h"
#include "core/status.h"

namespace opgate {

class Chooser;

struct OpInfo {
  std::string stem;        // moe_finalize_routing_v2_grad (file stem in every layer)
  std::string aclnn_name;  // MoeFinalizeRoutingV2Grad
  std::string short_name;  // mfrg (case id prefix)
  int reference_version = 1;
  // Strict parse of a case's params plus its tensor overrides; errors name the key.
  std::function<Expected<std::unique_ptr<Problem>>(const nlohmann::json& params,
                                                   const nlohmann::json& tensor_overrides)>
      parse;
  // One generated params object (the operator's generator over a Chooser).
  std::function<nlohmann::json(Chooser&)> generate;
};

}  // namespace opgate
