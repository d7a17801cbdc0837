// The per-case pipeline (style-and-layout.md B4): validate -> fill -> reference -> pack with poison
// and guards -> device -> guards -> unpack -> compare -> vacuity -> repeat for determinism; and
// its per-case isolation in a child process with a timeout.
#pragma once

#include <string>

#include "cases/registry.h"
#include "core/backend.h"
#include "harness/backends.h"
#include "core/case.h"
#include "core/report.h"

namespace opgate {

struct RunOptions {
  int repeat = 1;                  // device runs; > 1 requires bit-identical defined outputs
  bool against_golden = false;     // expected values from golden/<op>/<id>/ instead of the reference
  std::string golden_root = "golden";
  bool isolate = true;             // each case in a child process
  double timeout_s = 600;          // per case, isolated runs only
  bool vacuity = true;
  std::string repro_prefix = "opgate";  // how the repro line invokes the binary
};

// Runs one case in this process.
CaseResult run_case(const Case& c, Backend& backend, const RunOptions& opt);
// Runs one case in a forked child; a hang becomes TIMEOUT, a signal or abort CRASHED.
CaseResult run_case_isolated(const Case& c, Backend& backend, const RunOptions& opt);

// The one-line command that reruns a case: from its file when it has one, else from the
// failed/<id>.json the report writes.
std::string repro_command(const Case& c, const std::string& backend, const RunOptions& opt);

// Multi-line human-readable detail of a result: each failing output's worst elements with their
// domain index, expected / got / diff.
std::string describe_result(const CaseResult& r, int max_points = 5);

}  // namespace opgate
