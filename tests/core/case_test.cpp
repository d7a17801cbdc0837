// Case loading: ids are safe file names, unique per file and across every tier of the repository,
// and errors about a loaded case share one "<file>: cases[i]: case '<id>':" prefix.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/case.h"

namespace opgate {
namespace {

const char* const kFile = "dir/smoke.json";

std::string file_with(const std::string& cases, const std::string& defaults = "{}") {
  return R"({"op": "moe_finalize_routing_v2_grad", "defaults": )" + defaults + R"(, "cases": [)" + cases + "]}";
}

std::string case_with_id(const std::string& id) {
  return nlohmann::json{{"id", id}, {"params", {{"R", 2}}}}.dump();
}

// The error for a file whose second case has the given id, or "" when it loads.
std::string second_id_error(const std::string& id) {
  auto cases = parse_cases_text(file_with(case_with_id("mfrg.first.f32") + "," + case_with_id(id)), kFile);
  return cases ? "" : cases.status().message();
}

TEST(CaseId, ids_that_would_leave_their_folder_or_are_no_file_name_are_rejected) {
  const std::vector<std::string> bad = {"../../../escaped", "mfrg/x.f32", "..",  ".hidden",   "-x",
                                       "mfrg..f32",        "a b",        "tab\tid", "x\xc3\xa9", "back\\slash",
                                       std::string(201, 'a')};
  for (const std::string& id : bad) {
    const std::string msg = second_id_error(id);
    EXPECT_NE(msg.find(std::string(kFile) + ": cases[1]: case '" + id + "': field 'id': "), std::string::npos)
        << id << " -> " << msg;
  }
}

TEST(CaseId, documented_ids_and_derived_ones_load) {
  for (const char* id : {"mfrg.copy_no_scales.f32.001", "mfrg.reject_null_grad_y.f16", "mfrg.gen5.bf16.003",
                         "mfrg.big.bf16.min", "ifa.paged-4d.f16.002", "_x"}) {
    EXPECT_EQ(second_id_error(id), "") << id;
  }
  EXPECT_TRUE(check_case_id(std::string(200, 'a')).is_ok());
}

TEST(CaseId, a_single_case_object_is_checked_too) {
  auto c = parse_cases_text(case_with_id("../x"), "<command line>");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().message().rfind("<command line>: case '../x': field 'id': ", 0), 0u) << c.status().message();
}

TEST(CaseFile, duplicate_id_names_both_positions) {
  const std::string msg = second_id_error("mfrg.first.f32");
  EXPECT_NE(msg.find("dir/smoke.json: cases[1]: case 'mfrg.first.f32': duplicate case id (also cases[0])"),
            std::string::npos)
      << msg;
}

TEST(CaseFile, regression_error_has_the_case_prefix) {
  auto c = parse_cases_text(file_with(case_with_id("mfrg.r.f32")), "dir/regression.json");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().message(),
            "dir/regression.json: cases[0]: case 'mfrg.r.f32': field 'issue': mandatory in regression files");
}

TEST(CaseFile, problem_errors_have_the_case_prefix_and_name_defaults_keys_as_defaults) {
  auto from_defaults = parse_cases_text(file_with(case_with_id("mfrg.d.f32"), R"({"bogus": 1})"), kFile);
  ASSERT_TRUE(from_defaults) << from_defaults.status().message();
  auto p = make_problem(from_defaults->front());
  ASSERT_FALSE(p);
  EXPECT_EQ(p.status().message().rfind("dir/smoke.json: cases[0]: case 'mfrg.d.f32': field 'defaults.bogus': ", 0), 0u)
      << p.status().message();

  // The same key given by the case itself (overriding the default) is the case's params key.
  auto own = parse_cases_text(
      file_with(R"({"id": "mfrg.o.f32", "params": {"R": 2, "bogus": 2}})", R"({"bogus": 1})"), kFile);
  ASSERT_TRUE(own) << own.status().message();
  auto q = make_problem(own->front());
  ASSERT_FALSE(q);
  EXPECT_EQ(q.status().message().rfind("dir/smoke.json: cases[0]: case 'mfrg.o.f32': field 'params.bogus': ", 0), 0u)
      << q.status().message();

  // A bad value of a default is a defaults key too; a case-level one stays params.
  auto range = parse_cases_text(file_with(case_with_id("mfrg.h.f32"), R"({"H": -1})"), kFile);
  ASSERT_TRUE(range) << range.status().message();
  auto r = make_problem(range->front());
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("case 'mfrg.h.f32': field 'defaults.H': -1 is outside"), std::string::npos)
      << r.status().message();
}

// Ids key report files, baselines and golden folders: a reused id mixes two cases.
TEST(RepositoryCases, every_id_is_unique_across_all_tiers_and_operators) {
  const std::filesystem::path root = std::filesystem::path(OPGATE_SOURCE_DIR) / "cases";
  std::map<std::string, std::string> first;  // id -> "<file>: cases[i]"
  size_t files = 0;
  for (const auto& op_dir : std::filesystem::directory_iterator(root)) {
    if (!op_dir.is_directory()) continue;
    for (const auto& file : std::filesystem::directory_iterator(op_dir.path())) {
      if (file.path().extension() != ".json") continue;
      auto cases = load_case_file(file.path().string());
      ASSERT_TRUE(cases) << cases.status().message();
      ++files;
      for (const Case& c : *cases) {
        const std::string where = c.source + ": cases[" + std::to_string(c.index) + "]";
        auto [it, fresh] = first.emplace(c.id, where);
        EXPECT_TRUE(fresh) << "case id '" << c.id << "' at " << where << " is also at " << it->second;
      }
    }
  }
  EXPECT_GE(files, 4u);
}

}  // namespace
}  // namespace opgate
