// The per-case pipeline (style-and-layout.md B4): the stages of harness/stages.h run in order on a
// prepared case (harness/prepare.h), timed; and its isolation in a child process with a timeout.
#pragma once

#include <string>

#include "cases/registry.h"
#include "core/backend.h"
#include "core/case.h"
#include "core/report_folder.h"
#include "harness/backends.h"
#include "harness/prepare.h"

namespace opgate {

// Runs one prepared case in this process. With opt.dump_dir, `dumped` (when given) receives how
// writing the tensor dump went; otherwise a failed dump becomes one of the result's warnings.
CaseResult run_case(const PreparedCase& pc, Backend& backend, const RunOptions& opt, Status* dumped = nullptr);
// Prepares and runs one case (callers without a report folder: repro, shrink, tests).
CaseResult run_case(const Case& c, Backend& backend, const RunOptions& opt);
// Runs one case in a forked child; a hang becomes TIMEOUT, a signal or abort CRASHED. The child
// sends its result before freeing the case's tensors and does not free them (its exit does).
CaseResult run_case_isolated(const PreparedCase& pc, Backend& backend, const RunOptions& opt);
CaseResult run_case_isolated(const Case& c, Backend& backend, const RunOptions& opt);

// Elements beyond the kernel's range come from extreme values only: on a realistic fill without
// value overrides, a reference that declares some undefined is suspect (were it to declare every
// element so, any device output would pass), so such a passing case is MISTRUSTED with this reason.
std::optional<std::string> beyond_range_on_a_realistic_fill(const Case& c, const std::vector<OutputResult>& outputs);

}  // namespace opgate
