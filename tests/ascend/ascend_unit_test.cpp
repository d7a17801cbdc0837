// Unit tests of the ascend backend's pure rules: which CANN versions get the 19-parameter aclnnFFN
// call, and how many bytes after an output a kernel may touch (ALIGN_UP(len, 32) + 32).
#include <gtest/gtest.h>

#include "device/ascend/ascend_call.h"
#include "device/ascend/ascend_soc.h"

namespace opgate::ascend {
namespace {

TEST(AscendCannVersion, ReleasesFrom800) {
  EXPECT_TRUE(cann_at_least("8.0.0", 8, 0, 0));
  EXPECT_TRUE(cann_at_least("8.0.1", 8, 0, 0));
  EXPECT_TRUE(cann_at_least("8.1.RC1", 8, 0, 0));    // a pre-release of 8.1.0 is after 8.0.0
  EXPECT_TRUE(cann_at_least("8.3.RC1.standin", 8, 0, 0));
  EXPECT_TRUE(cann_at_least("9.0.0-beta.1", 8, 0, 0));
  EXPECT_TRUE(cann_at_least("10.0.0", 8, 0, 0));
}

TEST(AscendCannVersion, BeforeOrUnreadable) {
  EXPECT_FALSE(cann_at_least("7.0.0", 8, 0, 0));
  EXPECT_FALSE(cann_at_least("7.9.99", 8, 0, 0));
  EXPECT_FALSE(cann_at_least("8.0.RC1", 8, 0, 0));   // 8.0.RC1 precedes 8.0.0
  EXPECT_FALSE(cann_at_least("8.0.T5", 8, 0, 0));
  EXPECT_FALSE(cann_at_least("8.0", 8, 0, 0));
  EXPECT_FALSE(cann_at_least("", 8, 0, 0));
  EXPECT_FALSE(cann_at_least("unknown (aclsysGetCANNVersion failed with 100000)", 8, 0, 0));
  EXPECT_FALSE(cann_at_least("v8.0.0", 8, 0, 0));
  EXPECT_FALSE(cann_at_least("8..0", 8, 0, 0));
  EXPECT_FALSE(cann_at_least("99999999999.0.0", 8, 0, 0));  // beyond 9 digits: not a version
}

// ALIGN_UP(len, 32) + 32 - len, by hand: len 1 -> 32 + 32 - 1 = 63; 30 -> 34; 64 -> 32; 65 -> 63.
TEST(AscendGuards, SlackAfterAnOutput) {
  EXPECT_EQ(device_slack_bytes(1), 63u);
  EXPECT_EQ(device_slack_bytes(30), 34u);
  EXPECT_EQ(device_slack_bytes(64), 32u);
  EXPECT_EQ(device_slack_bytes(65), 63u);
  EXPECT_EQ(device_slack_bytes(0), 32u);
  for (size_t len = 0; len < 1024; ++len) {
    const size_t end = len + device_slack_bytes(len);
    EXPECT_EQ(end % 32, 0u) << len;
    EXPECT_GE(end, len + 32) << len;
    EXPECT_LT(end, len + 64) << len;
    EXPECT_LT(device_slack_bytes(len), kDeviceGuardBytes);
  }
}

}  // namespace
}  // namespace opgate::ascend
