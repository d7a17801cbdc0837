// Shared by the regression-claims tests (issue 12): what a claim sees and the claim tables of the
// four operators, one table per operator in regression_claims_*_test.cpp.
#pragma once

#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "core/tensor.h"

namespace opgate::regression_claims {

using Json = nlohmann::json;

// What a claim sees: the case's params with every default made explicit, and the filled inputs.
struct Filled {
  Json params;
  TensorMap in;
  const Tensor& at(const std::string& name) const { return in.at(name); }
  bool has(const std::string& name) const { return in.count(name) != 0 && in.at(name).defined(); }
  int64_t integer(const std::string& key) const { return params.at(key).get<int64_t>(); }
  bool flag(const std::string& key) const {
    return params.contains(key) && params.at(key).is_boolean() && params.at(key).get<bool>();
  }
};

using Predicate = std::function<bool(const Filled&)>;

struct Claim {
  Predicate holds;     // the condition the issue names
  std::string reason;  // or why it cannot be stated over params and inputs
};

// case id -> claim, per operator.
const std::map<std::string, Claim>& mfrg_claims();
const std::map<std::string, Claim>& fwb_claims();
const std::map<std::string, Claim>& mffn_claims();
const std::map<std::string, Claim>& ifa_claims();
const std::map<std::string, Claim>& ifa4_claims();

}  // namespace opgate::regression_claims
