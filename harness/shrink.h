// Shrinking a failing case: greedy search over smaller params (dimensions halved or decremented,
// flags off, rates to zero, exact fills), keeping a candidate only when it fails the same way on
// the same backend and costs less to run, within a time budget.
#pragma once

#include <string>
#include <vector>

#include "core/backend.h"
#include "core/case.h"
#include "harness/runner.h"

namespace opgate {

struct ShrinkOptions {
  double budget_s = 60;  // wall-clock budget for the whole search
  int max_runs = 5000;
  RunOptions run;        // isolate is honoured only for crashes and hangs
};

struct ShrinkResult {
  Case minimal;
  CaseResult result;            // the minimal case's failing result
  std::string signature;        // how it fails: verdict plus failing outputs
  int runs = 0;                 // device runs spent
  int steps = 0;                // accepted shrinking steps
  int64_t elements_before = 0;  // input elements of the original and the minimal case
  int64_t elements_after = 0;
  bool budget_exhausted = false;
};

// The failure signature of a result: "FAILED gradScalesOut,gradExpandedXOut", "CRASHED", ...
std::string failure_signature(const CaseResult& r);

// kInvalidCase if `failing` does not fail on `backend` to begin with.
Expected<ShrinkResult> shrink_case(const Case& failing, Backend& backend, const ShrinkOptions& opt);

}  // namespace opgate
