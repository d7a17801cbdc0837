// The one case of a case-file text, for tests that build a case inline (a failed parse is a test
// failure naming the parser's message, and gives an empty case).
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "cases/registry.h"
#include "core/case.h"

namespace opgate {

inline Case one_case(const std::string& text, const std::string& origin) {
  auto cases = parse_cases_text(text, origin);
  EXPECT_TRUE(cases) << cases.status().message();
  return cases && !cases->empty() ? cases->front() : Case{};
}

}  // namespace opgate
