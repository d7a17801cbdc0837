// run_in_child: the result a child writes, its end, and children forked from several threads at
// once (run -j) not holding each other's result pipes; a whole result ends the wait, and a result
// sent from inside the body leaves the body's locals alive.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "core/child_process.h"

namespace opgate {
namespace {

TEST(ChildProcess, returns_what_the_child_wrote_and_how_it_ended) {
  const ChildOutcome ok = run_in_child([] { return std::string("result text"); }, 60);
  EXPECT_EQ(ok.end, ChildOutcome::End::kExited);
  EXPECT_EQ(ok.exit_status, 0);
  EXPECT_EQ(ok.output, "result text");
  const ChildOutcome slow = run_in_child([] {
    std::this_thread::sleep_for(std::chrono::seconds(30));
    return std::string();
  }, 0.2);
  EXPECT_EQ(slow.end, ChildOutcome::End::kTimedOut);
}

// With run -j two workers fork at once, so a child can be forked in the instant between a
// sibling's pipe2() and its parent closing the write end. Modelled here: a pipe whose write end the
// parent holds while child A forks; once the parent closes it, the reader must see end-of-file
// although A still runs (had A's child kept a copy, the sibling's parent would wait for A's exit:
// a 3 ms case took as long as the slow case beside it).
TEST(ChildProcess, a_child_does_not_hold_a_siblings_result_pipe) {
  int sibling[2];
  ASSERT_EQ(pipe2(sibling, O_CLOEXEC), 0);
  std::atomic<bool> a_done{false};
  std::thread a([&] {
    run_in_child([] {
      std::this_thread::sleep_for(std::chrono::seconds(3));
      return std::string("a");
    }, 60);
    a_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // A's child is running
  close(sibling[1]);
  pollfd pfd{sibling[0], POLLIN, 0};
  const int ready = poll(&pfd, 1, 1000);
  char byte = 0;
  EXPECT_EQ(ready, 1);
  EXPECT_EQ(ready == 1 ? read(sibling[0], &byte, 1) : -1, 0) << "no end-of-file while A's child runs";
  EXPECT_FALSE(a_done.load());
  a.join();
  close(sibling[0]);
}

// Descriptors the parent holds (a report folder's lock, a history database) are closed in the child.
TEST(ChildProcess, the_child_holds_no_descriptor_of_the_parent) {
  const int fd = open("/dev/null", O_RDONLY);
  ASSERT_GE(fd, 3);
  const ChildOutcome c = run_in_child([fd] { return std::string(fcntl(fd, F_GETFD) == -1 ? "closed" : "open"); }, 60);
  close(fd);
  EXPECT_EQ(c.output, "closed");
}

TEST(ChildProcess, a_child_that_dies_before_its_result_is_signaled_without_output) {
  const ChildOutcome c = run_in_child([]() -> std::string { std::abort(); }, 60);
  EXPECT_EQ(c.end, ChildOutcome::End::kSignaled);
  EXPECT_EQ(c.signal, SIGABRT);
  EXPECT_EQ(c.output, "");
}

// The result is framed, so the parent knows it is whole without waiting for the pipe to close.
// Here a grandchild holds the pipe's write end for 30 s (a forked helper of a runtime, say); the
// parent still returns the whole result, and does not wait for the 20 s deadline.
TEST(ChildProcess, a_whole_result_ends_the_wait_though_the_pipe_stays_open) {
  const ChildOutcome c = run_in_child(
      [] {
        const pid_t child = getpid();
        if (fork() == 0) {
          prctl(PR_SET_PDEATHSIG, SIGKILL);  // gone with the child
          if (getppid() != child) _exit(0);  // the child ended before prctl took effect
          std::this_thread::sleep_for(std::chrono::seconds(30));
          _exit(0);
        }
        return std::string("whole");
      },
      20);
  EXPECT_EQ(c.end, ChildOutcome::End::kExited);
  EXPECT_EQ(c.exit_status, 0);
  EXPECT_EQ(c.output, "whole");
}

// An object whose destructor leaves a mark on disk.
struct MarksItsEnd {
  std::string path;
  ~MarksItsEnd() { std::ofstream(path) << "destroyed"; }
};

// send_result_and_exit: the result arrives as a returned one would, and the body's locals are never
// destroyed (a case child sends its result and leaves its tensors to the kernel).
TEST(ChildProcess, a_result_sent_from_the_body_leaves_its_locals_alive) {
  const std::string mark = testing::TempDir() + "child_process_test_mark_" + std::to_string(getpid());
  std::filesystem::remove(mark);
  const ChildOutcome c = run_in_child(
      [&]() -> std::string {
        MarksItsEnd local{mark};
        send_result_and_exit("sent with " + local.path);
      },
      60);
  EXPECT_EQ(c.end, ChildOutcome::End::kExited);
  EXPECT_EQ(c.output, "sent with " + mark);
  // The destructor has not run in the child (a returned result would have run it).
  const ChildOutcome returned = run_in_child(
      [&] {
        MarksItsEnd local{mark + ".returned"};
        return std::string("returned");
      },
      60);
  EXPECT_EQ(returned.output, "returned");
  EXPECT_FALSE(std::filesystem::exists(mark));
  EXPECT_TRUE(std::filesystem::exists(mark + ".returned"));
  std::filesystem::remove(mark + ".returned");
}

// Children of this process, zombies included, from /proc.
int children_of_this_process() {
  int n = 0;
  const std::string me = std::to_string(getpid());
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...: the fields after the last ')'.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state, ppid;
    rest >> state >> ppid;
    if (ppid == me) ++n;
  }
  return n;
}

// Children whose result came whole are reaped in the background: none is left behind, not even a
// zombie (polled for up to 30 s; each of these exits within milliseconds).
TEST(ChildProcess, children_with_a_whole_result_are_reaped) {
  for (int i = 0; i < 5; ++i) EXPECT_EQ(run_in_child([] { return std::string("x"); }, 60).output, "x");
  int left = children_of_this_process();
  for (int waited = 0; left > 0 && waited < 3000; ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    left = children_of_this_process();
  }
  EXPECT_EQ(left, 0);
}

}  // namespace
}  // namespace opgate
