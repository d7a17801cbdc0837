// Golden diff on hand-built golden folders: which changes are found, their size in device ulps, and
// which of them a float16 kernel comparison could see (hand arithmetic in each test).
#include "harness/golden_diff.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/npy.h"
#include "core/tensor.h"
#include "harness/golden_folder.h"

namespace opgate {
namespace {

class GoldenDiff : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/opgate_gdiff_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A golden case: expected/y.npy float64 for a float16 output, inputs/x.npy int32.
  std::string make_case(const std::string& root, const std::string& id, const std::vector<double>& y,
                        const std::vector<double>& x = {1, 2, 3}, int reference_version = 1) {
    const std::string d = dir_ + "/" + root + "/op_a/" + id;
    EXPECT_TRUE(make_dirs(d + "/expected").is_ok());
    EXPECT_TRUE(make_dirs(d + "/inputs").is_ok());
    EXPECT_TRUE(write_npy(d + "/expected/y.npy", Tensor::from_values(DType::kF64, {static_cast<int64_t>(y.size())}, y)).is_ok());
    EXPECT_TRUE(write_npy(d + "/inputs/x.npy", Tensor::from_values(DType::kI32, {static_cast<int64_t>(x.size())}, x)).is_ok());
    const nlohmann::json manifest{
        {"format", 1},
        {"reference_version", reference_version},
        {"tensors",
         {{"expected/y.npy", {{"dtype", "float16"}, {"stored_as", "float64"}}}, {"inputs/x.npy", {{"dtype", "int32"}}}}}};
    std::ofstream(d + "/manifest.json") << manifest.dump();
    std::ofstream(d + "/case.json") << nlohmann::json{{"id", id}, {"seed", 1}}.dump();
    return d;
  }
  std::string dir_;
};

TEST_F(GoldenDiff, identical_cases_have_no_findings) {
  const auto a = make_case("old", "c", {1, 2, 3, 4});
  const auto b = make_case("new", "c", {1, 2, 3, 4});
  const GoldenCaseDiff d = diff_golden_case(a, b);
  EXPECT_EQ(d.status, "identical");
  EXPECT_TRUE(d.tensors.empty());
  EXPECT_TRUE(d.notes.empty());
}

TEST_F(GoldenDiff, measures_changes_in_device_ulps_and_counts_the_visible_ones) {
  // float16 ulp on [2, 4) is 2^-9. 2 -> 2 + 2^-10 is half an ulp: a tie that rounds back to 2 (even),
  // invisible. 3 -> 3 + 2^-9 is one ulp: visible.
  const auto a = make_case("old", "c", {1, 2, 3, 4});
  const auto b = make_case("new", "c", {1, 2 + 0x1p-10, 3 + 0x1p-9, 4});
  const GoldenCaseDiff d = diff_golden_case(a, b);
  EXPECT_EQ(d.status, "changed");
  ASSERT_EQ(d.tensors.size(), 1u);
  const GoldenTensorDiff& t = d.tensors[0];
  EXPECT_EQ(t.file, "expected/y.npy");
  EXPECT_EQ(t.elements, 4);
  EXPECT_EQ(t.changed, 2);
  EXPECT_EQ(t.visible, 1);
  EXPECT_DOUBLE_EQ(t.max_abs, 0x1p-9);
  EXPECT_DOUBLE_EQ(t.max_ulps, 1.0);
}

TEST_F(GoldenDiff, a_change_away_from_zero_is_measured_at_the_new_value) {
  // 0 -> 72: ulp of float16 at 72 (in [64, 128)) is 2^-4, so the change is 72 / 2^-4 = 1152 ulps,
  // not 72 / 2^-24 (the subnormal step at 0).
  const auto a = make_case("old", "c", {0});
  const auto b = make_case("new", "c", {72});
  const GoldenCaseDiff d = diff_golden_case(a, b);
  ASSERT_EQ(d.tensors.size(), 1u);
  EXPECT_DOUBLE_EQ(d.tensors[0].max_ulps, 1152.0);
  GoldenTreeDiff tree;
  tree.cases.push_back(d);
  // Whole ulps, without an exponent to decode.
  EXPECT_NE(golden_diff_text(tree, "a", "b").find("      [0]: 0 -> 72 (1152 ulp of float16)\n"), std::string::npos)
      << golden_diff_text(tree, "a", "b");
}

TEST_F(GoldenDiff, integer_inputs_count_changed_elements) {
  const auto a = make_case("old", "c", {1}, {1, 2, 3});
  const auto b = make_case("new", "c", {1}, {1, 7, 3});
  const GoldenCaseDiff d = diff_golden_case(a, b);
  ASSERT_EQ(d.tensors.size(), 1u);
  EXPECT_EQ(d.tensors[0].file, "inputs/x.npy");
  EXPECT_EQ(d.tensors[0].changed, 1);
  EXPECT_EQ(d.tensors[0].visible, 0);  // not a float64 expected output
}

TEST_F(GoldenDiff, shape_change_version_bump_and_case_edit_are_named) {
  const auto a = make_case("old", "c", {1, 2});
  const auto b = make_case("new", "c", {1, 2, 3}, {1, 2, 3}, 2);
  std::ofstream(b + "/case.json") << nlohmann::json{{"id", "c"}, {"seed", 2}, {"note", "n"}}.dump();
  const GoldenCaseDiff d = diff_golden_case(a, b);
  EXPECT_EQ(d.status, "changed");
  ASSERT_EQ(d.tensors.size(), 1u);
  EXPECT_EQ(d.tensors[0].status, "reshaped");
  // One note per changed case field, not both whole cases on one line.
  ASSERT_EQ(d.notes.size(), 3u);
  EXPECT_EQ(d.notes[0], "reference_version 1 -> 2");
  EXPECT_EQ(d.notes[1], "case.json note: absent -> \"n\"");
  EXPECT_EQ(d.notes[2], "case.json seed: 1 -> 2");
}

TEST_F(GoldenDiff, tolerance_files_are_reported_apart_from_expected_values) {
  const auto a = make_case("old", "c", {1, 2});
  const auto b = make_case("new", "c", {1, 2});
  // Format 1 -> 2 adds the magnitudes; then one magnitude grows 3 -> 4 and one shrinks 8 -> 6.
  EXPECT_TRUE(write_npy(b + "/expected/y.mag.npy", Tensor::from_values(DType::kF64, {2}, {3, 8})).is_ok());
  nlohmann::json m = nlohmann::json::parse(std::ifstream(b + "/manifest.json"));
  m["format"] = 2;
  m["tensors"]["expected/y.mag.npy"] = {{"dtype", "float64"}};
  std::ofstream(b + "/manifest.json") << m.dump();
  GoldenCaseDiff d = diff_golden_case(a, b);
  ASSERT_EQ(d.tensors.size(), 1u);
  EXPECT_EQ(d.tensors[0].status, "added");
  EXPECT_TRUE(d.tensors[0].tolerance);
  EXPECT_EQ(d.notes, std::vector<std::string>{"format 1 -> 2"});
  EXPECT_FALSE(d.values_changed());
  EXPECT_TRUE(d.tolerances_changed());

  const auto c = make_case("newer", "c", {1, 2});
  EXPECT_TRUE(write_npy(c + "/expected/y.mag.npy", Tensor::from_values(DType::kF64, {2}, {4, 6})).is_ok());
  std::ofstream(c + "/manifest.json") << m.dump();
  d = diff_golden_case(b, c);
  ASSERT_EQ(d.tensors.size(), 1u);
  const GoldenTensorDiff& t = d.tensors[0];
  EXPECT_EQ(t.changed, 2);
  EXPECT_EQ(t.grew, 1);
  EXPECT_EQ(t.shrank, 1);
  EXPECT_EQ(t.max_abs, 2.0);   // |6 - 8|
  EXPECT_EQ(t.max_rel, 0.25);  // |6 - 8| / 8 (1/4 of 4 - 3 is also 0.25)
  GoldenTreeDiff tree;
  tree.cases.push_back(d);
  tree.cases[0].op = "op_a";
  tree.cases[0].id = "c";
  const std::string text = golden_diff_text(tree, "b", "c");
  EXPECT_NE(text.find("changed cases: 0 with inputs, expected values or care masks changed; 1 with tolerance"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  tolerance (magnitudes and slack; the allowance, not the expected values):\n"
                      "    expected/y.mag.npy: 2 of 2 elements changed (1 grew, 1 shrank), max |delta| 2, max relative 0.25"),
            std::string::npos)
      << text;
}

TEST_F(GoldenDiff, trees_report_added_removed_and_unreadable_cases) {
  make_case("old", "same", {1});
  make_case("new", "same", {1});
  make_case("old", "gone", {1});
  make_case("new", "fresh", {1});
  make_case("old", "broken", {1});
  const auto broken = make_case("new", "broken", {1});
  std::ofstream(broken + "/manifest.json") << "{";
  const GoldenTreeDiff d = diff_golden_trees(dir_ + "/old", dir_ + "/new");
  ASSERT_EQ(d.cases.size(), 4u);
  EXPECT_EQ(d.count("identical"), 1);
  EXPECT_EQ(d.count("removed"), 1);
  EXPECT_EQ(d.count("added"), 1);
  EXPECT_EQ(d.count("unreadable"), 1);
  const std::string text = golden_diff_text(d, "before", "after");
  EXPECT_NE(text.find("golden diff before -> after: 4 case(s): 0 changed, 1 added, 1 removed, 1 unreadable, 0 corrupted, "
                      "1 identical"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("REMOVED    op_a/gone"), std::string::npos) << text;
  EXPECT_NE(text.find("ADDED      op_a/fresh"), std::string::npos) << text;
  EXPECT_NE(text.find("manifest.json: malformed JSON"), std::string::npos) << text;
}

// The float16 expected values of a case, as a 2 x 3 tensor (the manifest keeps its 1-D entry: the
// diff reads shapes from the files).
void write_2x3(const std::string& dir, const std::vector<double>& y) {
  EXPECT_TRUE(write_npy(dir + "/expected/y.npy", Tensor::from_values(DType::kF64, {2, 3}, y)).is_ok());
}

TEST_F(GoldenDiff, lists_changed_elements_by_index_with_old_new_and_ulps) {
  const auto a = make_case("old", "c", {});
  const auto b = make_case("new", "c", {});
  write_2x3(a, {1, 2, 3, 4, 5, 6});
  // [0, 1]: 2 -> 2 + 2^-9, one float16 ulp on [2, 4); [1, 2]: 6 -> 6 + 2^-7, two ulps of 2^-8 on [4, 8).
  write_2x3(b, {1, 2 + 0x1p-9, 3, 4, 5, 6 + 0x1p-7});
  const GoldenCaseDiff d = diff_golden_case(a, b);
  ASSERT_EQ(d.tensors.size(), 1u);
  const auto& first = d.tensors[0].first;
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].index, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(first[0].before, 2.0);
  EXPECT_EQ(first[0].after, 2.001953125);
  EXPECT_DOUBLE_EQ(first[0].ulps, 1.0);
  EXPECT_EQ(first[1].index, (std::vector<int64_t>{1, 2}));
  EXPECT_DOUBLE_EQ(first[1].ulps, 2.0);
  GoldenTreeDiff tree;
  tree.cases.push_back(d);
  const std::string text = golden_diff_text(tree, "a", "b");
  EXPECT_NE(text.find("      [0, 1]: 2 -> 2.001953125 (1 ulp of float16)\n"
                      "      [1, 2]: 6 -> 6.0078125 (2 ulp of float16)\n"),
            std::string::npos)
      << text;
}

TEST_F(GoldenDiff, lists_the_first_n_then_counts_the_rest) {
  const auto a = make_case("old", "c", {1, 2, 3, 4});
  const auto b = make_case("new", "c", {9, 2, 9, 9});
  const GoldenCaseDiff d = diff_golden_case(a, b, 1);
  ASSERT_EQ(d.tensors.size(), 1u);
  ASSERT_EQ(d.tensors[0].first.size(), 1u);
  EXPECT_EQ(d.tensors[0].first[0].index, std::vector<int64_t>{0});
  GoldenTreeDiff tree;
  tree.cases.push_back(d);
  EXPECT_NE(golden_diff_text(tree, "a", "b").find("      ... 2 more changed element(s)"), std::string::npos);
}

TEST_F(GoldenDiff, an_integer_change_is_its_difference) {
  const auto a = make_case("old", "c", {1}, {1, 2, 3});
  const auto b = make_case("new", "c", {1}, {1, 7, 3});
  GoldenTreeDiff tree;
  tree.cases.push_back(diff_golden_case(a, b));
  EXPECT_NE(golden_diff_text(tree, "a", "b").find("      [1]: 2 -> 7 (by 5)\n"), std::string::npos)
      << golden_diff_text(tree, "a", "b");
}

TEST_F(GoldenDiff, a_file_that_no_longer_matches_its_digest_is_corruption_not_a_change) {
  const auto a = make_case("old", "c", {1, 2});
  const auto b = make_case("new", "c", {1, 2});
  // Both manifests record the digest of the values as regenerated.
  const std::string digest = *golden_folder::sha256_file(a + "/expected/y.npy", 1 << 20);
  for (const auto& dir : {a, b}) {
    nlohmann::json m = nlohmann::json::parse(std::ifstream(dir + "/manifest.json"));
    m["tensors"]["expected/y.npy"]["sha256"] = digest;
    std::ofstream(dir + "/manifest.json") << m.dump();
  }
  EXPECT_EQ(diff_golden_case(a, b).status, "identical");
  // A hand edit of the new values without a regen: the manifest still names the old digest.
  EXPECT_TRUE(write_npy(b + "/expected/y.npy", Tensor::from_values(DType::kF64, {2}, {1, 3})).is_ok());
  const GoldenCaseDiff d = diff_golden_case(a, b);
  EXPECT_EQ(d.status, "corrupted");
  EXPECT_TRUE(d.tensors.empty());
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0].rfind(b + "/expected/y.npy: sha256 differs from manifest.json", 0), 0u) << d.notes[0];
  GoldenTreeDiff tree;
  tree.cases.push_back(d);
  tree.cases[0].op = "op_a";
  tree.cases[0].id = "c";
  const std::string text = golden_diff_text(tree, "a", "b");
  EXPECT_NE(text.find("0 changed, 0 added, 0 removed, 0 unreadable, 1 corrupted"), std::string::npos) << text;
  EXPECT_NE(text.find("CORRUPTED  op_a/c\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace opgate
