// One function run in a forked child with a deadline: the isolation that lets a crashing or hanging
// kernel cost one verdict instead of the night (DESIGN.md §8). The child returns text through a
// pipe; the parent learns how it ended.
#pragma once

#include <functional>
#include <string>

namespace opgate {

struct ChildOutcome {
  enum class End { kExited, kSignaled, kTimedOut, kNotStarted };
  End end = End::kNotStarted;
  int exit_status = 0;  // kExited
  int signal = 0;       // kSignaled
  std::string output;   // everything the child's body returned (possibly cut short)
  std::string error;    // kNotStarted: why (pipe or fork failed)
};

// Forks; the child runs `body`, writes its result to the parent and exits 0. The parent reads
// until the child closes the pipe or `timeout_s` passes (then the child is killed with SIGKILL).
ChildOutcome run_in_child(const std::function<std::string()>& body, double timeout_s);

}  // namespace opgate
