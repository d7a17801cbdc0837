// Unit tests of core/status: names, context chaining, Expected, the propagation macros and the
// OPGATE_CHECK abort message.

#include "core/status.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace opgate {
namespace {

TEST(StatusBasics, names_and_defaults) {
  EXPECT_STREQ(status_code_name(StatusCode::kOk), "ok");
  EXPECT_STREQ(status_code_name(StatusCode::kAclnnError), "aclnn_error");
  EXPECT_STREQ(status_code_name(StatusCode::kInvalidCase), "invalid_case");
  EXPECT_STREQ(status_code_name(StatusCode::kUnsupported), "unsupported");
  EXPECT_STREQ(status_code_name(StatusCode::kBackendError), "backend_error");
  EXPECT_STREQ(status_code_name(StatusCode::kIoError), "io_error");
  EXPECT_STREQ(status_code_name(StatusCode::kParseError), "parse_error");
  EXPECT_STREQ(status_code_name(StatusCode::kInternal), "internal");
  Status ok;
  EXPECT_TRUE(ok.is_ok());
  EXPECT_TRUE(Status::ok().is_ok());
  EXPECT_EQ(ok.to_string(), "ok");
  EXPECT_EQ(io_error("x").code(), StatusCode::kIoError);
  EXPECT_EQ(invalid_case("x").code(), StatusCode::kInvalidCase);
  EXPECT_EQ(internal_error("x").code(), StatusCode::kInternal);
}

TEST(StatusContext, reads_outermost_first) {
  const Status s = parse_error("bad shape").with_context("weight1").with_context("moe_ffn");
  EXPECT_EQ(s.code(), StatusCode::kParseError);
  EXPECT_EQ(s.message(), "moe_ffn: weight1: bad shape");
  EXPECT_EQ(s.to_string(), "parse_error: moe_ffn: weight1: bad shape");
  const Status a = aclnn_error(161002, "x is null").with_context("mfrg.empty.f16.001");
  EXPECT_EQ(a.aclnn_code(), 161002);
  EXPECT_EQ(a.to_string(), "aclnn_error 161002: mfrg.empty.f16.001: x is null");
  // An ok Status stays ok and message-free.
  const Status ok = Status::ok().with_context("ignored");
  EXPECT_TRUE(ok.is_ok());
  EXPECT_EQ(ok.message(), "");
}

Status fails_when(bool fail) { return fail ? invalid_case("boom") : Status::ok(); }

Status try_twice(bool first, bool second, int* reached) {
  OPGATE_TRY(fails_when(first));
  *reached = 1;
  OPGATE_TRY(fails_when(second));
  *reached = 2;
  return Status::ok();
}

Expected<std::unique_ptr<int>> make_value(bool fail) {
  if (fail) return parse_error("no value");
  return std::make_unique<int>(7);
}

Expected<int> unwrap(bool fail) {
  OPGATE_ASSIGN_OR_RETURN(std::unique_ptr<int> p, make_value(fail));  // move-only values work
  OPGATE_ASSIGN_OR_RETURN(int doubled, Expected<int>(*p * 2));
  return doubled;
}

TEST(StatusMacros, try_returns_the_first_failure) {
  int reached = 0;
  EXPECT_TRUE(try_twice(false, false, &reached).is_ok());
  EXPECT_EQ(reached, 2);
  reached = 0;
  const Status s = try_twice(false, true, &reached);
  EXPECT_EQ(s.code(), StatusCode::kInvalidCase);
  EXPECT_EQ(reached, 1);
}

TEST(StatusMacros, assign_or_return) {
  Expected<int> ok = unwrap(false);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(*ok, 14);
  EXPECT_TRUE(ok.status().is_ok());
  Expected<int> bad = unwrap(true);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.status().code(), StatusCode::kParseError);
  EXPECT_EQ(bad.status().message(), "no value");
}

TEST(StatusCheckDeathTest, prints_location_condition_and_message) {
  EXPECT_DEATH(OPGATE_CHECK(1 + 1 == 3, "arithmetic is broken"),
               "opgate: internal check failed at .*status_test\\.cpp:[0-9]+: 1 \\+ 1 == 3: "
               "arithmetic is broken");
  OPGATE_CHECK(true, "never printed");
}

}  // namespace
}  // namespace opgate
