// Strict reading of a case's params object: typed getters with defaults and range checks, and a
// final check that names any key no getter asked for (DESIGN.md §5: unknown keys are errors).
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/status.h"

namespace opgate {

class ParamReader {
 public:
  explicit ParamReader(const nlohmann::json& params) : j_(params) {}

  // Each getter records the first error and returns the default after it.
  int64_t integer(const char* key, int64_t def, int64_t lo, int64_t hi);
  double real(const char* key, double def, double lo, double hi);
  bool boolean(const char* key, bool def);
  DType dtype(const char* key, DType def);
  // Ok, or the first error; unknown keys are reported with the list of known ones.
  Status finish() const;

 private:
  const nlohmann::json* take(const char* key);
  void fail(const std::string& msg);

  const nlohmann::json& j_;
  std::set<std::string> known_;
  Status error_;
};

}  // namespace opgate
