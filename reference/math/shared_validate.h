// What every operator's validate uses: one rejection line with its aclnn code and the rule it
// applies, saturating extents (tampered shapes must not overflow int64), and a tensor's spec when
// the argument is present.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "core/status.h"
#include "core/tensor.h"

namespace opgate::ref {

// "161002: <what> (<rule>)", carrying the code for the runner's EXPECTED_REJECT check.
inline Status reject(int64_t code, const std::string& what, const char* rule) {
  return aclnn_error(code, fmt::format("{}: {} ({})", code, what, rule));
}

inline int64_t mul_sat(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}

inline int64_t numel_sat(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n = mul_sat(n, d);
  return n;
}

// The spec of argument `name`, or nullptr when it is absent (an optional tensor not passed).
inline const TensorSpec* present_spec(const SpecMap& s, const std::string& name) {
  const auto it = s.find(name);
  return it == s.end() || !it->second.present ? nullptr : &it->second;
}

}  // namespace opgate::ref
