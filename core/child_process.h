// One function run in a forked child with a deadline: the isolation that lets a crashing or hanging
// kernel cost one verdict instead of the night (DESIGN.md §8). The child returns text through a
// pipe; the parent learns how it ended. The child never outlives the parent (PR_SET_PDEATHSIG), and
// SIGINT/SIGTERM to the parent stop the current child so that a run can end cleanly.
#pragma once

#include <functional>
#include <string>

namespace opgate {

struct ChildOutcome {
  // kInterrupted: the parent received SIGINT/SIGTERM (see install_stop_handlers); the child was
  // killed and its result, if any, must be discarded.
  enum class End { kExited, kSignaled, kTimedOut, kNotStarted, kInterrupted };
  End end = End::kNotStarted;
  int exit_status = 0;  // kExited
  int signal = 0;       // kSignaled
  std::string output;   // everything the child's body returned (possibly cut short)
  std::string error;    // kNotStarted: why (pipe or fork failed)
};

// Forks; the child runs `body`, writes its result to the parent and exits 0 (_exit: no destructor
// and no atexit handler runs after the result). The result travels framed (its length, then its
// bytes), so the parent knows when it is whole: it then returns kExited with status 0 at once and
// reaps the child on a thread of its own, without waiting for the kernel to tear the child down
// (unmapping gigabytes takes 0.1-0.5 s at nightly sizes, on a core the parent does not need).
// Nothing of the child runs after a whole result but _exit, so its status is 0 unless someone
// kills it in that instant; a child that dies before its result is whole is kSignaled or kExited
// with its status, as it died. Otherwise the parent reads until the pipe closes or `timeout_s`
// passes (then the child is killed with SIGKILL).
// The child gets SIGKILL when the parent dies, however it dies (kill -9 included), and ignores
// SIGINT/SIGTERM: a terminal's Ctrl-C reaches the whole process group, and the parent decides.
ChildOutcome run_in_child(const std::function<std::string()>& body, double timeout_s);

// For a body run by run_in_child: sends `result` as the body's return value would, then ends the
// child at once, while the body's locals are still alive (a case child sends its result before
// freeing its tensors). Called anywhere else it aborts: there is no parent reading.
[[noreturn]] void send_result_and_exit(const std::string& result);

// Installs SIGINT/SIGTERM handlers for a run: the first signal is recorded (stop_signal() returns
// it) and kills the current child; a second one kills the current child and exits the process at
// once with 128 + signal. Without a call, the default dispositions stay.
void install_stop_handlers();
// The first SIGINT/SIGTERM received since install_stop_handlers(), or 0.
int stop_signal();

}  // namespace opgate
