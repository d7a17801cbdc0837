// fork + pipe + poll with a deadline + waitpid, in one place.
#include "core/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>

namespace opgate {

ChildOutcome run_in_child(const std::function<std::string()>& body, double timeout_s) {
  ChildOutcome out;
  int fds[2];
  // Close-on-exec: a process the child starts (a runtime's helper) must not hold the pipe open, or
  // the parent would wait for its end-of-file until the deadline.
  if (pipe2(fds, O_CLOEXEC) != 0) {
    out.error = "pipe() failed";
    return out;
  }
  std::fflush(nullptr);  // buffered output would otherwise be printed twice
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    out.error = "fork() failed";
    return out;
  }
  if (pid == 0) {
    close(fds[0]);
    const std::string text = body();
    size_t off = 0;
    while (off < text.size()) {
      const ssize_t n = write(fds[1], text.data() + off, text.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  const auto t0 = std::chrono::steady_clock::now();
  bool timed_out = false;
  char buf[65536];
  for (;;) {
    const double left_ms =
        timeout_s * 1000 - std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (left_ms <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(std::min(left_ms, 1000.0)) + 1);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    out.output.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    out.end = ChildOutcome::End::kTimedOut;
  } else if (WIFSIGNALED(wstatus)) {
    out.end = ChildOutcome::End::kSignaled;
    out.signal = WTERMSIG(wstatus);
  } else {
    out.end = ChildOutcome::End::kExited;
    out.exit_status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
  }
  return out;
}

}  // namespace opgate
