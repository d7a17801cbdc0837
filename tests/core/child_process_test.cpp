// run_in_child: the result a child writes, its end, and children forked from several threads at
// once (run -j) not holding each other's result pipes.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
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

}  // namespace
}  // namespace opgate
