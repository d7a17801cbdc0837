// fork + pipe + poll with a deadline + waitpid, in one place; and the stop signals that end a run.
#include "core/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

namespace opgate {
namespace {

// Written by the signal handler, read by the run loop: lock-free and async-signal-safe.
volatile sig_atomic_t g_stop_signal = 0;
// The running case child (0: none), so that a signal handler can kill it.
volatile sig_atomic_t g_child_pid = 0;

void on_stop_signal(int sig) {
  const pid_t child = g_child_pid;
  if (child > 0) kill(child, SIGKILL);
  if (g_stop_signal != 0) _exit(128 + sig);  // the second signal: abort at once
  g_stop_signal = sig;
}

// In the child, before the body: die with the parent, and leave stop signals to it.
void child_setup(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent may have died before prctl took effect; then the child was reparented already and
  // the death signal will never come.
  if (getppid() != parent) _exit(1);
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  g_child_pid = 0;
}

// In the child: every descriptor but stdin/stdout/stderr and its own result pipe closed. With
// run -j, cases fork from several threads at once, and a child would otherwise hold the write end
// of a sibling's result pipe, so that sibling's parent thread waits for an end-of-file until this
// child exits (a 3 ms case took as long as the slow case beside it). It also drops the report
// folder's lock and the history database, which a child must not use.
void close_other_descriptors(int keep) {
  if (keep > 3) close_range(3, static_cast<unsigned>(keep) - 1, 0);
  close_range(static_cast<unsigned>(keep) + 1, ~0U, 0);
}

// In a child of run_in_child: the write end of its result pipe; -1 elsewhere.
int g_result_fd = -1;

// The frame of a result: its length in 8 bytes (this machine's byte order; both ends are this
// process's image), then its bytes.
constexpr size_t kFrameHeader = sizeof(uint64_t);

void write_all(int fd, const char* bytes, size_t n) {
  size_t off = 0;
  while (off < n) {
    const ssize_t w = write(fd, bytes + off, n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // the parent is gone or stopped reading: nobody to tell
    off += static_cast<size_t>(w);
  }
}

// The result's length once its header has arrived, else SIZE_MAX.
size_t framed_length(const std::string& received) {
  if (received.size() < kFrameHeader) return SIZE_MAX;
  uint64_t n = 0;
  std::memcpy(&n, received.data(), kFrameHeader);
  return static_cast<size_t>(n);
}

bool frame_complete(const std::string& received) {
  const size_t n = framed_length(received);
  return n != SIZE_MAX && received.size() - kFrameHeader >= n;
}

// What the parent read of a child's framed result: its bytes (possibly cut short), whether they are
// all there, and whether the deadline passed first.
struct ReadResult {
  std::string text;
  bool whole = false;
  bool timed_out = false;
};

// Reads until the result is whole, the pipe closes, `timeout_s` passes or a stop signal comes.
ReadResult read_result(int fd, double timeout_s) {
  ReadResult out;
  const auto t0 = std::chrono::steady_clock::now();
  char buf[65536];
  std::string received;
  while (g_stop_signal == 0) {
    const double left_ms =
        timeout_s * 1000 - std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (left_ms <= 0) {
      out.timed_out = true;
      break;
    }
    pollfd pfd{fd, POLLIN, 0};
    // At most 200 ms per wait: a stop signal landing just before poll() is seen within that.
    const int ready = poll(&pfd, 1, static_cast<int>(std::min(left_ms, 200.0)) + 1);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    received.append(buf, static_cast<size_t>(n));
    if (frame_complete(received)) {
      out.whole = true;
      break;
    }
  }
  if (received.size() > kFrameHeader) {
    out.text = received.substr(kFrameHeader, std::min(framed_length(received), received.size() - kFrameHeader));
  }
  return out;
}

// Children whose result arrived whole, reaped as they end, each by a thread that takes no signal
// (the stop handlers stay with the run's threads), so the run goes on while the kernel tears them
// down. At exit the process waits for them, so their CPU time is counted (time -v, getrusage) and no
// child outlives a finished run.
class Reaper {
 public:
  static Reaper& instance() {
    static Reaper* reaper = new Reaper;  // never destroyed: reaping threads may outlive statics
    return *reaper;
  }

  void reap_later(pid_t pid) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++pending_;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);  // the thread inherits the mask
    auto reap = [this, pid] {
      int wstatus = 0;
      while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) ended_.notify_all();
    };
    try {
      std::thread(reap).detach();
    } catch (const std::system_error&) {
      reap();  // no thread to spare (a process limit): the child has sent its result and is exiting
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }

 private:
  Reaper() {
    std::atexit([] {
      Reaper& r = instance();
      std::unique_lock<std::mutex> lock(r.mutex_);
      r.ended_.wait(lock, [&] { return r.pending_ == 0; });
    });
    // A forked process has none of the reaping threads, and none of the children is its own: it
    // starts with nothing pending (else its exit() would wait forever). The mutex is held across
    // fork, so the count is consistent in both processes.
    pthread_atfork([] { instance().mutex_.lock(); }, [] { instance().mutex_.unlock(); },
                   [] {
                     instance().pending_ = 0;
                     instance().mutex_.unlock();
                   });
  }

  std::mutex mutex_;
  std::condition_variable ended_;
  int pending_ = 0;
};

}  // namespace

void send_result_and_exit(const std::string& result) {
  if (g_result_fd < 0) {
    std::fputs("opgate: send_result_and_exit called outside a child of run_in_child\n", stderr);
    std::abort();
  }
  const uint64_t n = result.size();
  write_all(g_result_fd, reinterpret_cast<const char*>(&n), kFrameHeader);
  write_all(g_result_fd, result.data(), result.size());
  _exit(0);
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: poll() returns EINTR and the loop sees the stop at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() { return g_stop_signal; }

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
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    out.error = "fork() failed";
    return out;
  }
  if (pid == 0) {
    child_setup(parent);
    close_other_descriptors(fds[1]);
    g_result_fd = fds[1];
    send_result_and_exit(body());
  }
  g_child_pid = pid;
  // A stop signal that arrived between the last case and the fork found no child to kill.
  if (g_stop_signal != 0) kill(pid, SIGKILL);
  close(fds[1]);
  ReadResult got = read_result(fds[0], timeout_s);
  close(fds[0]);
  out.output = std::move(got.text);
  // A whole result came before any stop or deadline: the child has nothing left to do but exit.
  if (got.whole) {
    g_child_pid = 0;
    Reaper::instance().reap_later(pid);
    out.end = ChildOutcome::End::kExited;
    return out;
  }
  const bool timed_out = got.timed_out;
  const bool interrupted = g_stop_signal != 0;
  if (timed_out || interrupted) kill(pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  g_child_pid = 0;
  if (interrupted) {
    out.end = ChildOutcome::End::kInterrupted;
  } else if (timed_out) {
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
