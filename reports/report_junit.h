// junit.xml as CI tools read it (Jenkins, GitLab): one <testsuite> per operator, one <testcase>
// per case with classname "opgate.<stem>.<tier>" (Jenkins groups by operator, then tier).
//   FAILED, and MISTRUSTED when the run is strict   -> <failure>  (the kernel is wrong or unproven)
//   BACKEND_ERROR, INVALID_CASE, TIMEOUT, CRASHED   -> <error>    (the harness or device broke)
//   SKIPPED                                         -> <skipped>
// Counts (tests, failures, errors, skipped), time, timestamp, hostname and the run settings as
// <properties> with plain values (objects flattened to dotted names) on every suite; a failure's
// body holds the reason, the worst elements and the repro command. Valid against
// tests/cli/junit.xsd (Jenkins' JUnit schema's constraints).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace opgate {

// `run_info` is run.json (its "strict" decides MISTRUSTED), `timestamp` ISO 8601 UTC.
std::string render_junit(const nlohmann::json& run_info, const std::vector<CaseResult>& results,
                         const std::string& timestamp, const std::string& hostname);

}  // namespace opgate
