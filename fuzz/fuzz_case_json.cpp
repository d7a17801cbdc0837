// libFuzzer target for the case-file loader (DESIGN.md §8: malformed input gives one clear error
// naming the file and field, never a crash): parse_cases_text + make_problem + validate on arbitrary
// text, plus the lossless round trips of a case (case_to_json) and of its params (params_json).
#include <string>

#include <fmt/format.h>

#include "core/case.h"
#include "cases/registry.h"
#include "fuzz/op_target.h"

namespace {

constexpr const char* kTarget = "fuzz_case_json";
constexpr const char* kOrigin = "<fuzz>";

void check_case(const opgate::Case& c) {
  using opgate::fuzz::report_finding;
  const nlohmann::json j = opgate::case_to_json(c);
  auto again = opgate::parse_case(j, "<round trip>", "", nlohmann::json::object());
  if (!again || opgate::case_to_json(*again) != j) {
    report_finding(kTarget, "case-roundtrip",
                   fmt::format("case_to_json gives {}, which {}", j.dump(),
                               again ? "parses to a different case" : "fails: " + again.status().message()),
                   &c);
  }
  auto problem = opgate::make_problem(c);
  if (!problem) {
    const std::string& msg = problem.status().message();
    if (msg.find(fmt::format("case '{}'", c.id)) == std::string::npos) {
      report_finding(kTarget, "error-without-case", "the error does not name the case: " + msg, &c);
    }
    return;
  }
  const opgate::OpInfo& op = (*problem)->op();
  const nlohmann::json params = (*problem)->params_json();
  auto reparsed = op.parse(params, c.tensors);
  if (!reparsed || (*reparsed)->params_json() != params) {
    report_finding(kTarget, "params-roundtrip",
                   fmt::format("params_json {} does not parse back to itself{}", params.dump(),
                               reparsed ? "" : ": " + reparsed.status().message()),
                   &c);
  }
  const opgate::Status valid = (*problem)->validate();
  if (!valid.is_ok()) {
    if (auto why = opgate::fuzz::rejection_problem(valid); !why.empty()) {
      report_finding(kTarget, "reject-without-code", why, &c);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto cases = opgate::parse_cases_text(text, kOrigin);
  if (!cases) {
    const std::string& msg = cases.status().message();
    if (msg.rfind(kOrigin, 0) != 0) {
      opgate::fuzz::report_finding(kTarget, "error-without-file", "the error does not start with the file: " + msg);
    }
    return 0;
  }
  for (const opgate::Case& c : *cases) check_case(c);
  return 0;
}
