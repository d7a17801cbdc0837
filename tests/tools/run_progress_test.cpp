// The pieces of `opgate run -j` and its progress line that are plain functions; expected values
// by hand arithmetic. (The terminal behaviour end to end: tests/cli/jobs_test.sh.)
#include <gtest/gtest.h>

#include "tools/run_parallel.h"
#include "tools/run_progress.h"

namespace opgate::cli {
namespace {

TEST(RunProgress, eta_is_the_pace_of_the_weight_done) {
  // 2 of 6 units in 10 s: 4 units left at 5 s each.
  EXPECT_DOUBLE_EQ(*eta_seconds(10, 2, 6), 20);
  EXPECT_DOUBLE_EQ(*eta_seconds(10, 6, 6), 0);
  EXPECT_FALSE(eta_seconds(10, 0, 6).has_value());  // no pace yet
  EXPECT_FALSE(eta_seconds(0, 2, 6).has_value());
}

TEST(RunProgress, text) {
  EXPECT_EQ(progress_text(12, 222, 3, 41, 130), "[ 12/222] 3 failing, 0:41 elapsed, about 2:10 left");
  EXPECT_EQ(progress_text(222, 222, 0, 3725, 0), "[222/222] 0 failing, 1:02:05 elapsed");
  EXPECT_EQ(progress_text(0, 9, 0, 0.4, std::nullopt), "[0/9] 0 failing, 0:00 elapsed");
}

TEST(RunProgress, line_only_on_a_terminal_without_no_color_or_ci) {
  EXPECT_EQ(progress_style(true, false, false), ProgressStyle::kLine);
  EXPECT_EQ(progress_style(true, true, false), ProgressStyle::kPlain);
  EXPECT_EQ(progress_style(true, false, true), ProgressStyle::kPlain);
  EXPECT_EQ(progress_style(false, false, false), ProgressStyle::kPlain);
}

TEST(RunProgress, weight_has_a_fixed_part) {
  EXPECT_DOUBLE_EQ(case_weight(0), 4194304.0);
  EXPECT_DOUBLE_EQ(case_weight(1000), 4195304.0);
}

TEST(RunParallel, heaviest_first_and_ties_in_case_order) {
  EXPECT_EQ(start_order({1, 5, 3, 5}), (std::vector<size_t>{1, 3, 2, 0}));
  EXPECT_TRUE(start_order({}).empty());
}

TEST(RunParallel, child_threads_share_the_budget_among_busy_workers) {
  EXPECT_EQ(child_threads(2, 2, 10), 1);  // two workers busy: one thread each
  EXPECT_EQ(child_threads(2, 2, 1), 2);   // the last case to start gets the whole budget
  EXPECT_EQ(child_threads(7, 3, 2), 3);   // 7 / 2, rounded down
  EXPECT_EQ(child_threads(1, 4, 4), 1);   // never below one
  EXPECT_EQ(child_threads(8, 4, 100), 2);
}

}  // namespace
}  // namespace opgate::cli
