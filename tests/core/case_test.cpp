// Case loading: ids are safe file names, unique per file and across every tier of the repository,
// and errors about a loaded case share one "<file>: cases[i]: case '<id>':" prefix.
#include <unistd.h>

#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cases/registry.h"

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

namespace opgate {
namespace {

// Restores the default --max-case-bytes after a test sets it.
struct MaxCaseBytes {
  explicit MaxCaseBytes(uint64_t bytes) { set_max_case_bytes(bytes); }
  ~MaxCaseBytes() { set_max_case_bytes(0); }
};

Case one_case(const std::string& params, const std::string& extra = "") {
  auto cases = parse_cases_text(file_with(R"({"id": "mfrg.size.f32", "params": )" + params + extra + "}"), kFile);
  EXPECT_TRUE(cases) << cases.status().message();
  return cases->front();
}

TEST(CaseSize, a_case_over_max_case_bytes_is_refused_naming_file_case_and_both_sizes) {
  // R=2^20, H=2^16 float32: gradY alone is 2^36 elements, 256 GiB.
  const Case huge = one_case(R"({"dtype": "float32", "R": 1048576, "K": 64, "H": 65536, "scales": true})");
  auto p = make_problem(huge);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidCase);
  EXPECT_NE(p.status().message().find(std::string(kFile) + ": cases[0]: case 'mfrg.size.f32': field 'params': the "
                                                           "case needs "),
            std::string::npos)
      << p.status().message();
  EXPECT_NE(p.status().message().find("over --max-case-bytes"), std::string::npos);
}

TEST(CaseSize, dimensions_whose_product_overflows_saturate_instead_of_wrapping) {
  // 2^40 * 2^40 wraps to 0 in 64 bits; a wrapped size would pass any limit.
  const Case wraps = one_case(R"({"dtype": "float32", "R": 1099511627776, "H": 1099511627776})");
  auto problem = make_problem(wraps);
  // Refused by the params range or by the size: either way before any allocation.
  ASSERT_FALSE(problem) << "a case of 2^80 elements was accepted";
  EXPECT_NE(problem.status().message().find("mfrg.size.f32"), std::string::npos);
}

TEST(CaseSize, the_limit_counts_three_device_copies_and_two_doubles_per_element) {
  // R=4, H=16, K=1, float32, no scales or bias: gradY [4,16] and gradExpandedXOut [4,16] float32,
  // expandedRowIdx [4] int32 (plus whatever optional tensors are absent). gradY alone costs
  // 64 * (3*4 + 16) = 1792 bytes, so a 1000-byte limit refuses the case and 1 MiB admits it.
  const Case small = one_case(R"({"dtype": "float32", "R": 4, "H": 16, "expertNum": 2})");
  {
    MaxCaseBytes limit(1000);
    EXPECT_FALSE(make_problem(small));
  }
  {
    MaxCaseBytes limit(1 << 20);
    auto p = make_problem(small);
    ASSERT_TRUE(p) << p.status().message();
    EXPECT_GE(case_bytes(**p), 2u * 1792u + 4u * (3 * 4 + 16));
    EXPECT_LT(case_bytes(**p), 1u << 20);
  }
}

TEST(CaseSize, a_call_the_operator_rejects_is_never_filled_so_its_size_does_not_matter) {
  const Case rejected = one_case(R"({"dtype": "float32", "R": 1048576, "K": 64, "H": 65536, "scales": true})",
                                 R"(, "tensors": {"gradY": {"dtype": "int32"}}, "expect": 161002)");
  auto p = make_problem(rejected);
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ((*p)->validate().aclnn_code(), 161002);
}

TEST(CaseSize, the_default_is_half_of_physical_memory) {
  const uint64_t phys = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE));
  EXPECT_LE(default_max_case_bytes(), phys / 2);
  EXPECT_GE(default_max_case_bytes(), phys / 2 - static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE)));
  EXPECT_EQ(max_case_bytes(), default_max_case_bytes());
}

TEST(CaseFile, duplicate_keys_and_a_bom_are_refused_naming_the_file) {
  auto dup = parse_cases_text(file_with(R"({"id": "mfrg.a.f32", "seed": 1, "seed": 2})"), kFile);
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.status().message(),
            std::string(kFile) + ": field 'cases[0].seed': duplicate key 'seed' (each key may occur once per object)");
  auto bom = parse_cases_text("\xEF\xBB\xBF" + file_with(case_with_id("mfrg.a.f32")), kFile);
  ASSERT_FALSE(bom);
  EXPECT_NE(bom.status().message().find("byte-order mark"), std::string::npos);
}

TEST(CaseFile, dev_zero_is_refused_by_its_size) {
  auto cases = load_case_file("/dev/zero");
  ASSERT_FALSE(cases);
  EXPECT_EQ(cases.status().message(), "/dev/zero: more than 8388608 bytes, over the 8 MiB case file size limit");
}

}  // namespace
}  // namespace opgate

namespace opgate {
namespace {

// Every valid case checked in must run with the default --max-case-bytes of the machines CI and
// the nightly gate use (24 GiB: half is 12 GiB), or a tier would refuse its own cases.
TEST(CaseSize, every_checked_in_case_fits_the_default_limit_of_a_24_GiB_machine) {
  constexpr uint64_t kLimit = uint64_t{12} << 30;
  const MaxCaseBytes unlimited(std::numeric_limits<uint64_t>::max());
  int checked = 0;
  for (const auto& dir : std::filesystem::directory_iterator(std::string(OPGATE_SOURCE_DIR) + "/cases")) {
    if (!dir.is_directory()) continue;
    for (const auto& file : std::filesystem::directory_iterator(dir.path())) {
      if (file.path().extension() != ".json") continue;
      auto cases = load_case_file(file.path().string());
      ASSERT_TRUE(cases) << cases.status().message();
      for (const Case& c : *cases) {
        if (c.expect != 0) continue;
        auto problem = make_problem(c);
        ASSERT_TRUE(problem) << problem.status().message();
        EXPECT_LE(case_bytes(**problem), kLimit) << file.path() << ": " << c.id << " needs "
                                                 << bytes_text(case_bytes(**problem));
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 300);  // every tier of the four operators was read
}

}  // namespace
}  // namespace opgate
