// The bounded JSON reader (core/json_read.h): every limit rejects with the file and the JSON path,
// and none of them can be got round by nesting, repetition or an endless file.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "core/json_read.h"

namespace opgate {
namespace {

std::string error_of(const std::string& text) {
  auto j = parse_json_bounded(text, "f.json");
  return j ? "" : j.status().message();
}

std::string nested_arrays(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(JsonRead, depth_64_is_read_and_65_is_refused_naming_the_limit) {
  EXPECT_EQ(error_of(nested_arrays(64)), "");
  EXPECT_EQ(error_of(nested_arrays(65)), "f.json: field '[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
                                         "[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
                                         "[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]': nested deeper "
                                         "than 64 levels (JSON depth limit)");
}

TEST(JsonRead, a_hundred_thousand_levels_end_in_an_error_not_a_stack_overflow) {
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "{\"k\":";
  deep += "1" + std::string(100000, '}');
  EXPECT_NE(error_of(deep).find("field 'k.k.k.k"), std::string::npos);
  EXPECT_NE(error_of(deep).find("nested deeper than 64 levels"), std::string::npos);
  EXPECT_NE(error_of(nested_arrays(100000)).find("nested deeper than 64 levels"), std::string::npos);
}

TEST(JsonRead, duplicate_keys_are_refused_with_their_path_and_sibling_objects_may_reuse_keys) {
  EXPECT_EQ(error_of(R"({"cases": [{"id": "a"}, {"params": {"R": 1, "H": 2, "R": 3}}]})"),
            "f.json: field 'cases[1].params.R': duplicate key 'R' (each key may occur once per object)");
  EXPECT_EQ(error_of(R"({"op": 1, "op": 1})"), "f.json: field 'op': duplicate key 'op' (each key may occur once per object)");
  EXPECT_EQ(error_of(R"([{"a": 1}, {"a": 2}, {"b": {"a": 3}}])"), "");
}

TEST(JsonRead, a_byte_order_mark_is_refused_with_its_own_message) {
  EXPECT_EQ(error_of("\xEF\xBB\xBF{}"), "f.json: starts with a UTF-8 byte-order mark; save it as UTF-8 without BOM");
}

TEST(JsonRead, malformed_text_names_the_byte_on_one_line) {
  const std::string msg = error_of("{\"a\": [1, 2,\n\n 3 x]}");
  EXPECT_EQ(msg.rfind("f.json: malformed JSON: at byte ", 0), 0u) << msg;
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  EXPECT_NE(error_of("1e999").find("malformed JSON: at byte"), std::string::npos);
  EXPECT_NE(error_of("").find("unexpected end of input"), std::string::npos);
  // A 1 MB unterminated string: the error quotes none of it at length.
  EXPECT_LT(error_of("\"" + std::string(1 << 20, 'x')).size(), 400u);
}

TEST(JsonRead, text_over_the_size_limit_is_refused_before_parsing) {
  const std::string big(kMaxJsonBytes + 1, ' ');
  EXPECT_EQ(error_of(big), "f.json: 8388609 bytes, over the 8 MiB JSON size limit");
}

TEST(JsonRead, a_shared_budget_counts_every_value_of_every_document) {
  // [1,[2,3]] holds five values: the outer array, 1, the inner array, 2 and 3.
  JsonBudget budget{7, "test budget"};
  EXPECT_TRUE(parse_json_bounded("[1,[2,3]]", "a", &budget));
  EXPECT_EQ(budget.values_left, 2u);
  EXPECT_TRUE(parse_json_bounded("{\"k\":1}", "b", &budget));  // the object and 1
  EXPECT_EQ(budget.values_left, 0u);
  auto over = parse_json_bounded("7", "c", &budget);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.status().message(), "c: more JSON values than the test budget allows");
}

class BoundedFile : public ::testing::Test {
 protected:
  std::string path_ = (std::filesystem::temp_directory_path() / ("json_read_test." + std::to_string(getpid()))).string();
  void write(const std::string& bytes) {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  void TearDown() override { std::remove(path_.c_str()); }
};

TEST_F(BoundedFile, a_file_of_exactly_the_limit_is_read_and_one_byte_more_is_refused) {
  write("0123456789");
  auto at_limit = read_file_bounded(path_, 10, "test");
  ASSERT_TRUE(at_limit) << at_limit.status().message();
  EXPECT_EQ(*at_limit, "0123456789");
  auto over = read_file_bounded(path_, 9, "test");
  ASSERT_FALSE(over);
  EXPECT_EQ(over.status().message(), path_ + ": 10 bytes, over the 0 MiB test size limit");
}

TEST_F(BoundedFile, an_endless_file_is_refused_after_limit_plus_one_bytes) {
  auto zero = read_file_bounded("/dev/zero", 1 << 20, "case file");
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.status().message(), "/dev/zero: more than 1048576 bytes, over the 1 MiB case file size limit");
  auto json = read_json_file("/dev/zero");
  ASSERT_FALSE(json);
  EXPECT_NE(json.status().message().find("over the 8 MiB JSON size limit"), std::string::npos);
}

TEST_F(BoundedFile, a_folder_is_refused_by_name) {
  auto dir = read_file_bounded("/tmp", 10, "test");
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.status().message(), "/tmp: is a folder, not a file");
}

}  // namespace
}  // namespace opgate
